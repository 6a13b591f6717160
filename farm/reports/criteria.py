"""The per-criterion scorecard (SPEC 17) as report text: what the terminal, text, Markdown, HTML
and JUnit share, so every format says the same thing in the same words."""

from __future__ import annotations

from farm.models import CaseStats, SweepReport
from farm.models.criteria import CriterionStats
from farm.stats.criteria import failing_criteria

__all__ = ["CRITERIA_HEADER", "criteria_lines", "criterion_row", "failing_text", "judge_mark"]

MAX_CASES_LISTED = 20
"""Cases whose failing criteria the terminal and text summary list; the rest are counted."""

CRITERIA_HEADER = ("Criterion", "Check", "Kind", "Met", "Pass rate", "95% CI", "Label")


def judge_mark(c: CriterionStats) -> str:
    """`` (judge-noisy: flip rate 30%)`` for a criterion whose judge flips (SPEC 23); ``''`` otherwise."""
    if not c.judge_noisy or c.judge_flip_rate is None:
        return ""
    return f" (judge-noisy: flip rate {100 * c.judge_flip_rate:.3g}%)"


def failing_text(stats: CaseStats) -> str:
    """``2 of 3 criteria failing: json_path $.city == Rome 7/10, contains bye 4/10``; ``''`` when
    every criterion was met on every run that reached it (or the case has none)."""
    failing = failing_criteria(stats.criteria)
    if not failing:
        return ""
    shown = ", ".join(f"{c.criterion} {c.passed}/{c.runs}{judge_mark(c)}" for c in failing)
    return f"{len(failing)} of {len(stats.criteria)} criteria failing: {shown}"


def criteria_lines(report: SweepReport) -> list[str]:
    """One line per case with a failing criterion (``  <case>: 2 of 3 criteria failing: …``)."""
    lines = [f"  {stats.id}{f' [{stats.arm}]' if stats.arm else ''}: {text}"  # a matrix's arm (SPEC 22)
             for stats in report.results if (text := failing_text(stats))]
    if not lines:
        return []
    more = len(lines) - MAX_CASES_LISTED
    return ["criteria:", *lines[:MAX_CASES_LISTED], *([f"  … {more} more cases"] if more > 0 else [])]


def criterion_row(c: CriterionStats) -> tuple[str, ...]:
    """One criterion as table cells, in ``CRITERIA_HEADER``'s order."""
    low, high = c.pass_rate_ci
    return (c.id, c.criterion, c.kind, f"{c.passed}/{c.runs}", f"{c.pass_rate}%", f"{low}–{high}%",
            c.label + judge_mark(c))
