"""The assessment as one self-contained HTML page: a "Failure modes" section per case.

Rendered entirely by Jinja with autoescape (no script at all, so the page's CSP forbids
scripts): every agent-produced string is text. The look is the sweep report's stylesheet.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from farm.assess.models import Assessment
from farm.reports.html_kit import asset, template_environment

__all__ = ["render_assessment_html"]


def render_assessment_html(assessment: Assessment) -> str:
    """The page (pure: the same assessment gives the same text)."""
    cases: list[dict[str, Any]] = []
    for case in assessment.cases:
        cases.append({**case.model_dump(), "failed": sum(m.count for m in case.modes)})
    new = sum(1 for case in assessment.cases for mode in case.modes if mode.new)
    failing = sum(1 for case in cases if case["failed"])
    meta = [("Source", assessment.source), ("Judge", assessment.judge or "none: the modes are the failure classes"),
            ("Cases", str(len(cases)))]
    return template_environment().get_template("assess.html.j2").render(
        title="Failure modes · agent-farm",
        verdict=f"{new} new mode{'s' if new != 1 else ''}" if new else f"{failing} failing case{'s' * (failing != 1)}",
        tone="bad" if new else "muted",
        meta_items=[(label, value) for label, value in meta if value],
        cases=cases,
        css=Markup(asset("report.css")),
    )
