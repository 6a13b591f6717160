"""A matrix report as text (SPEC 22): one table, the arms as columns, for the terminal and Markdown.

Each cell is the case's pass rate in that arm with its runs, and the verdict against the
baseline arm when it is not ``unchanged``; the rows below the cases are each arm's summary
(pass rate and interval, cost, tokens, p50/p95 latency), then the Pareto fronts. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from farm.models import ArmSummary, MatrixCell, SweepReport
from farm.stats.sweep import arms_below_overall_gate

MARKS = {"worse": "worse", "better": "better", "inconclusive": "?", "missing": "not run"}


def cell_text(cell: MatrixCell, *, mark: bool = True) -> str:
    """``95.0% (19/20)``, then the verdict when it is not ``unchanged`` (``mark``: a page shows a badge)."""
    rate = f"{100 * cell.passed / cell.runs:.1f}% ({cell.passed}/{cell.runs})" if cell.runs else "-"
    said = MARKS.get(cell.verdict) if mark else None
    return f"{rate} {said}" if said else rate


def _money(value: float | None) -> str:
    return "?" if value is None else f"${value:.4g}"


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def summary_rows(summaries: Sequence[ArmSummary]) -> list[tuple[str, list[str]]]:
    """(label, one text per arm) for each summary row."""
    return [
        ("pass rate", [f"{s.pass_rate:.1f}% [{s.pass_rate_ci[0]:.1f}–{s.pass_rate_ci[1]:.1f}]" for s in summaries]),
        ("cases passed", [f"{s.passed_cases}/{s.cases}" for s in summaries]),
        ("cost", [_money(s.cost_usd) for s in summaries]),
        ("tokens", ["?" if s.tokens is None else f"{s.tokens:,}" for s in summaries]),
        ("p50/p95 ms", [f"{_ms(s.p50_latency_ms)}/{_ms(s.p95_latency_ms)}" for s in summaries]),
    ]


def matrix_rows(report: SweepReport) -> tuple[list[str], list[list[str]]]:
    """The table's header (``case``, then each arm, the baseline marked) and its rows."""
    assert report.matrix is not None and report.arms is not None
    names = [arm.name for arm in report.arms]
    header = ["case", *[f"{n} (baseline)" if n == report.matrix.baseline else n for n in names]]
    by_case: dict[str, dict[str, MatrixCell]] = {}
    for cell in report.matrix.cells:
        by_case.setdefault(cell.case, {})[cell.arm] = cell
    rows = [[case, *[cell_text(cells[n]) if n in cells else "-" for n in names]] for case, cells in by_case.items()]
    rows += [[label, *texts] for label, texts in summary_rows([arm.summary for arm in report.arms])]
    return header, rows


def front_lines(report: SweepReport) -> list[str]:
    """The verdict counts and the Pareto fronts, a line each."""
    matrix = report.matrix
    assert matrix is not None
    worse = [f"{arm} worse on {n}" for arm, n in matrix.worse.items() if n]
    lines = [f"against {matrix.baseline}: " + ("; ".join(worse) if worse else "no arm worse on any case")]
    below = arms_below_overall_gate(report)  # each arm is gated on its own runs
    gate = report.envelope.min_overall_pass_rate or 0.0
    lines += [f"arm {arm.name}: pass rate {arm.summary.pass_rate:.1f}% is below --min-overall-pass-rate "
              f"{gate * 100:g}%" for arm in report.arms or () if arm.name in below]
    lines.append("pareto front, pass rate vs cost: " + (", ".join(matrix.pareto_cost) or "unknown (a cost is unknown)"))
    lines.append("pareto front, pass rate vs p95 latency: " + (", ".join(matrix.pareto_latency) or "unknown"))
    return lines


def table_lines(report: SweepReport, max_rows: int = 30) -> list[str]:
    """The table as aligned text lines, then the fronts."""
    header, rows = matrix_rows(report)
    cases = len(rows) - 5
    shown = rows[:max_rows] + rows[cases:] if cases > max_rows else rows
    widths = [max(len(r[i]) for r in [header, *shown]) for i in range(len(header))]
    lines = ["  ".join(text.ljust(w) for text, w in zip(row, widths, strict=True)).rstrip() for row in [header, *shown]]
    if cases > max_rows:
        lines.insert(1 + max_rows, f"… {cases - max_rows} more cases in the report")
    return lines + front_lines(report)


__all__ = ["cell_text", "front_lines", "matrix_rows", "summary_rows", "table_lines"]
