"""Words for the semantic figures (SPEC 16), shared by the Markdown, HTML and summary renderers."""

from __future__ import annotations

from farm.extras import install_hint
from farm.models import CaseStats, SweepSummary

INSTALL_HINT = install_hint("semantic")
"""How to get the figures (``farm.extras``: a module of constants, light for renderers)."""

MAX_CLUSTERS_SHOWN = 5
"""Clusters of meaning listed per case; the rest are counted."""

_SWEEP_WORDS = {
    "computed": "computed (answers clustered by meaning)",
    "not_installed": f"not computed: the embedding model is not installed ({INSTALL_HINT})",
    "not_text": "not computed: the answers are structures, compared exactly",
    "off": "not computed: turned off (--no-semantic or FARM_SEMANTIC=0)",
}


def semantic_summary(summary: SweepSummary) -> str | None:
    """The sweep's line: computed, or why not and how to get the figures; None when no case answered."""
    return None if summary.semantic is None else _SWEEP_WORDS[summary.semantic]


def semantic_case_text(stats: CaseStats) -> str | None:
    """``semantic consistency 0.875, 2 clusters of meaning`` (``estimated`` past the sample cap)."""
    if stats.semantic_consistency is None or stats.semantic_clusters is None:
        return None
    count = len(stats.semantic_clusters)
    plural = "s" if count != 1 else ""
    text = f"semantic consistency {stats.semantic_consistency:.3f}, {count} cluster{plural} of meaning"
    return text + (" (estimated from a sample of the answers)" if stats.semantic_estimated else "")


def cluster_rows(stats: CaseStats) -> list[tuple[str, str, str]]:
    """(runs, share, example) per shown cluster, largest first."""
    return [(str(c.count), f"{round(c.share * 100, 1)}%", c.example)
            for c in (stats.semantic_clusters or [])[:MAX_CLUSTERS_SHOWN]]
