"""HTML for sweep history: the comparison page, the trend page, the report's "compared with" section.

The two pages follow the sweep report's standard (``farm.reports.html``): one self-contained file,
a Content-Security-Policy that forbids every fetch, the data in a script-safe JSON block, and a
script that builds the page with ``textContent`` (never markup) from it. The "compared with"
section is rendered server-side by Jinja2 (autoescape) into the sweep report.
"""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup

from farm.reports.comparison import headline, rows_to_show, side
from farm.reports.html_kit import asset, script_safe_json, template_environment
from farm.stats.compare import Comparison
from farm.wording import plural

__all__ = ["compared_with_section", "render_comparison_html", "render_trend_html"]

SECTION_ROWS = 50
"""Cases listed in a report's "compared with" section (the rest are counted)."""


def _page(template: str, data: Any, **context: Any) -> str:
    return template_environment().get_template(template).render(
        data_json=Markup(script_safe_json(json.dumps(data, ensure_ascii=False))),
        css=Markup(asset("report.css") + asset("history.css")),
        **context,
    )


def render_comparison_html(comparison: Comparison) -> str:
    """The comparison as one self-contained, filterable page."""
    regressed = comparison.summary.get("regressed", 0)
    return _page(
        "compare.html.j2", comparison.model_dump(mode="json"),
        title=f"Comparison · {comparison.head.sweep_id or 'report'}",
        verdict={"text": f"{regressed} regressed" if regressed else "No regression",
                 "tone": "bad" if regressed else "good"},
        meta_items=[("Base", side(comparison.base)), ("Head", side(comparison.head)),
                    ("Alpha", f"{comparison.alpha:g}"), ("Min drop", f"{comparison.min_drop:g} points")],
        cards=[{"label": verdict, "value": str(n)} for verdict, n in comparison.summary.items()],
        js=Markup(asset("history.js") + asset("compare.js")),
    )


def render_trend_html(document: dict[str, Any]) -> str:
    """The trend page of ``farm history --html``: ``document`` is ``farm.history.trends.trend_document``."""
    sweeps = document.get("sweeps") or []
    flagged = sum(1 for case in document.get("cases") or [] if case.get("flag"))
    first, last = (sweeps[0].get("started_at"), sweeps[-1].get("started_at")) if sweeps else (None, None)
    return _page(
        "trend.html.j2", document,
        title="Trends · agent-farm",
        meta_items=[(label, str(value)) for label, value in (("Sweeps", len(sweeps)), ("From", first),
                                                              ("To", last)) if value is not None],
        verdict={"text": f"{plural(flagged, 'case')} newly flaky, broken or fallen" if flagged
                 else "No case newly flaky, broken or fallen", "tone": "bad" if flagged else "good"},
        js=Markup(asset("history.js") + asset("trend.js")),
    )


def compared_with_section(comparison: Comparison) -> dict[str, Any]:
    """What a sweep report shows of its comparison: counts and the rows worth a look."""
    rows = rows_to_show(comparison)
    return {
        "base": side(comparison.base), "headline": headline(comparison),
        "regressed": comparison.summary.get("regressed", 0),
        "alpha": f"{comparison.alpha:g}", "min_drop": f"{comparison.min_drop:g}",
        "rows": [{"verdict": r.verdict, "id": r.id, "delta": "" if r.delta is None else f"{r.delta:+.1f}",
                  "q": "" if r.q_value is None else f"{r.q_value:.3g}",
                  "base": "—" if r.base is None else f"{r.base.passed}/{r.base.runs}",
                  "head": "—" if r.head is None else f"{r.head.passed}/{r.head.runs}"}
                 for r in rows[:SECTION_ROWS]],
        "more": max(0, len(rows) - SECTION_ROWS),
    }
