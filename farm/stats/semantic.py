"""A case's answers as the semantic figures see them (SPEC 16): a bounded sample of distinct texts.

Memory stays bounded in runs: at most ``SEMANTIC_SAMPLE_CAP`` distinct answers are kept per case,
each cut to ``SEMANTIC_TEXT_CHARS``; runs giving a new answer past the cap are not sampled, and the
figures are then computed over the sampled runs only (``semantic_estimated``). The model runs once
per distinct answer, in batches, in the process that aggregates the case, and only when asked for
the case's figures (``figures``); a case whose distinct answers an earlier one gave (in this
process, or one before it on this machine) reuses its clusters (``farm.semantic.case_clusters``).
Outputs that are not text (structures) keep exact comparison:
the semantic figures are null and the status ``not_text``. A sweep run with ``--no-semantic`` (or
``FARM_SEMANTIC=0``) samples nothing: its cases' status is ``off`` (``SweepPlan.semantic``).
"""

from __future__ import annotations

from typing import Any

from farm.models import RunResult
from farm.models.stats import SemanticCluster, SemanticStatus
from farm.semantic.cluster import Cluster
from farm.stats.measures import round_ratio_half_up
from farm.stats.outputs import normalise_output, output_digest

SEMANTIC_SAMPLE_CAP = 200
"""Distinct answers kept per case for the semantic figures; beyond, the figures are estimated."""

SEMANTIC_TEXT_CHARS = 2000
"""Characters of an answer kept for its embedding (the model reads at most 256 tokens anyway)."""


def semantic_text(result: RunResult) -> Any:
    """The text compared by meaning: the answer, or the whole transcript of a multi-turn run.

    None: the run gave no answer; a non-``str`` value: the answer is not text.
    """
    turns = result.turns
    if turns is not None and len(turns) > 1:
        for turn in turns:
            if turn.output is not None and not isinstance(turn.output, str):
                return turn.output
        return "\n".join(f"user: {normalise_output(t.input)}\nagent: {normalise_output(t.output or '')}"
                         for t in turns)
    return result.output


class SemanticSample:
    """Distinct answers of a case with their run counts, up to a cap; embedded as they come in
    (``farm.semantic.BackgroundEmbeddings``) when the model is installed. ``enabled=False``: the
    figures are turned off; only whether the case answered is kept (status ``off``)."""

    def __init__(self, cap: int = SEMANTIC_SAMPLE_CAP, *, enabled: bool = True) -> None:
        self.cap = cap if enabled else 0
        self.enabled = enabled
        self.answered = False
        self.texts: dict[bytes, str] = {}
        self.counts: dict[bytes, int] = {}
        self.unsampled = 0
        self.not_text = 0
        self._embeddings: Any = None
        self._installed: bool | None = None

    def add(self, value: Any, digest: bytes | None = None) -> None:
        """Count one run's answer (``semantic_text``'s value); None (no answer) is not counted.
        ``digest``: ``output_digest(value)`` when the caller has it already (the accumulator's, of
        the same output)."""
        if value is None:
            return
        if not self.enabled:
            self.answered = True
            return
        if not isinstance(value, str):
            self.not_text += 1
            return
        key = output_digest(value) if digest is None else digest
        if key in self.counts:
            self.counts[key] += 1
        elif len(self.counts) < self.cap:
            self.counts[key] = 1
            self.texts[key] = normalise_output(value)[:SEMANTIC_TEXT_CHARS]
            self._embed_later(self.texts[key])
        else:
            self.unsampled += 1

    def _embed_later(self, text: str) -> None:
        # A case with one distinct answer has one cluster: the model starts at the second.
        if len(self.texts) < 2 or not self._model_here():
            return
        if self._embeddings is None:
            from farm.semantic import BackgroundEmbeddings

            self._embeddings = BackgroundEmbeddings()
            for earlier in list(self.texts.values())[:-1]:
                self._embeddings.add(earlier)
        self._embeddings.add(text)

    def _model_here(self) -> bool:
        if self._installed is None:
            from farm.semantic import missing_requirement

            self._installed = missing_requirement() is None
        return self._installed

    def figures(self) -> dict[str, Any]:
        """``semantic_status``, ``semantic_consistency``, ``semantic_clusters``, ``semantic_estimated``."""
        if not self.enabled:
            return {"semantic_status": "off"} if self.answered else {}
        if self.not_text:
            return {"semantic_status": "not_text"}
        if not self.counts:
            return {}
        if not self._model_here():
            return {"semantic_status": "not_installed"}
        keys = list(self.counts)
        counts = [self.counts[k] for k in keys]
        texts = [self.texts[k] for k in keys]
        if self._embeddings is None:  # one distinct answer
            clusters = [Cluster(example=texts[0], count=counts[0], members=[0])]
        else:
            from farm.semantic import case_clusters

            def vectors() -> Any:
                found = self._embeddings.vectors()
                return np_stack([found[t] for t in texts])

            clusters = case_clusters(texts, counts, vectors)
        total = sum(counts)
        return {
            "semantic_status": "computed",
            "semantic_consistency": round_half_up_share(clusters[0].count, total),
            "semantic_clusters": [SemanticCluster(count=c.count, share=round_half_up_share(c.count, total),
                                                  example=c.example) for c in clusters],
            "semantic_estimated": self.unsampled > 0,
        }


def np_stack(rows: list[Any]) -> Any:
    import numpy as np

    return np.stack(rows).astype(np.float32)


def round_half_up_share(part: int, whole: int) -> float:
    """``part / whole`` rounded to 3 places (half up), as ``consistency`` is."""
    return round_ratio_half_up(part, whole, 3) if whole else 0.0


def sweep_semantic_status(statuses: list[SemanticStatus | None]) -> SemanticStatus | None:
    """One word for the sweep: ``computed`` if any case's figures were, else ``off`` if they were
    turned off, else ``not_installed`` if any case had text answers, else ``not_text`` if any
    case's answers were structures."""
    for status in ("computed", "off", "not_installed", "not_text"):
        if status in statuses:
            return status
    return None
