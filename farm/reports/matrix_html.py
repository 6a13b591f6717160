"""The HTML report's matrix section (SPEC 22): the arms side by side, and a scatter of each arm's
pass rate (with its 95 % interval) against its cost, as inline SVG like the report's other charts.

Geometry only: the template (``report.html.j2``, ``charts.html.j2``) draws it, every text
autoescaped. Pure.
"""

from __future__ import annotations

from typing import Any

from farm.matrix.text import cell_text, front_lines, summary_rows
from farm.models import SweepReport

_TONES = {"worse": "regressed", "better": "improved", "inconclusive": "inconclusive", "missing": "not_run",
          "unchanged": "unchanged", "baseline": "unchanged"}
"""Each verdict's badge (the comparison page's colours)."""


def matrix_section(report: SweepReport) -> dict[str, Any] | None:
    """The table (a column per arm), the summaries below it, the fronts and the scatter; None
    when the report is not a matrix's."""
    if report.matrix is None or report.arms is None:
        return None
    names = [arm.name for arm in report.arms]
    by_case: dict[str, dict[str, Any]] = {}
    for cell in report.matrix.cells:
        shown = {"text": cell_text(cell, mark=False), "tone": _TONES[cell.verdict], "verdict": cell.verdict}
        by_case.setdefault(cell.case, {})[cell.arm] = shown
    rows = [{"case": case, "cells": [cells.get(n, {"text": "-", "tone": "not_run", "verdict": "missing"})
                                     for n in names]} for case, cells in by_case.items()]
    return {"arms": names, "baseline": report.matrix.baseline, "rows": rows,
            "summary": summary_rows([arm.summary for arm in report.arms]), "fronts": front_lines(report),
            "scatter": scatter(report)}


def scatter(report: SweepReport) -> dict[str, Any] | None:
    """Each arm at (cost, pass rate), its interval as a vertical bar; None when no arm's cost is known."""
    assert report.arms is not None
    known = [arm for arm in report.arms if arm.summary.cost_usd is not None]
    if not known:
        return None
    width, height, left, right, top, bottom = 560, 260, 48, 24, 14, 40
    most = max(arm.summary.cost_usd or 0.0 for arm in known) or 1.0
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(cost: float) -> float:
        return left + cost / (most * 1.1) * plot_w

    def y(rate: float) -> float:
        return top + plot_h - rate / 100 * plot_h

    front = set(report.matrix.pareto_cost if report.matrix else ())
    points = [{"name": arm.name, "x": x(arm.summary.cost_usd or 0.0), "y": y(arm.summary.pass_rate),
               "lo": y(arm.summary.pass_rate_ci[0]), "hi": y(arm.summary.pass_rate_ci[1]), "front": arm.name in front,
               "dy": -6 if i % 2 == 0 else 14,  # neighbours' labels apart
               "tip": f"{arm.name}: {arm.summary.pass_rate:.1f}% [{arm.summary.pass_rate_ci[0]:.1f}–"
                      f"{arm.summary.pass_rate_ci[1]:.1f}] at ${arm.summary.cost_usd:.4g}"}
              for i, arm in enumerate(known)]
    grid = [{"y": y(rate), "label": f"{rate}%"} for rate in (0, 25, 50, 75, 100)]
    axis = [{"x": x(most * f), "label": f"${most * f:.3g}"} for f in (0.0, 0.5, 1.0)]
    return {"width": width, "height": height, "left": left, "right": width - right, "base": top + plot_h,
            "points": points, "grid": grid, "axis": axis, "missing": len(report.arms) - len(known)}


__all__ = ["matrix_section", "scatter"]
