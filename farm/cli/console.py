"""What a person reads on the terminal at the end of a sweep: the table, the failures, the totals.

``print_summary`` shows the cases that need attention first, each with its 95 % interval, its
stability class and its most common failure reason; then one summary line that separates
failures from errors and timeouts, as pytest's "N failed, M errors" does. ``FailureDigest`` is
``-v``: each distinct failure printed once, with how many runs failed that way and one
example (with its traceback for an exception), instead of one line per run. Everything goes to
stderr (stdout stays for direct-message output and pipes), with markup off: case ids and agent
messages are printed as they are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from rich.console import Console

from farm.agents.secrets import redact
from farm.models import CaseStats, RunResult, SweepReport, SweepStart, SweepSummary, run_status
from farm.reports.criteria import criteria_lines
from farm.reports.failures import class_counts, failure_lines
from farm.reports.fleet import BIASED_NOTE, fleet_line, stopped_early
from farm.stats import below_overall_gate, is_partial, unreachable
from farm.stats.reasons import classed_reasons
from farm.wording import plural

MAX_REASON_CHARS = 60
"""The table's failure-reason column is cut to this many characters."""
MAX_ID_CHARS = 40
"""Case ids longer than this are cut in the table (the reports keep them whole)."""
MAX_IDS_SHOWN = 10
"""Case ids listed per line (skipped, not run, a failure's cases); the rest are counted."""


def say(console: Console, text: str, *, style: str | None = None) -> None:
    """One line as it is (no markup, no highlighting, no emoji codes made pictures: a case id
    ``C:fire:`` stays that), never wrapped: CI logs grep it. Secrets this process registered are
    masked: a failure's example quotes what the agent answered."""
    console.print(redact(text), style=style, markup=False, highlight=False, emoji=False, soft_wrap=True)


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:MAX_IDS_SHOWN])
    return shown + (f" (+{len(ids) - MAX_IDS_SHOWN} more)" if len(ids) > MAX_IDS_SHOWN else "")


def _top_reason(stats: CaseStats) -> str:
    if not stats.failure_reasons:
        return ""
    top = stats.failure_reasons[0]
    return f"{top.count}× {_cut(top.reason, MAX_REASON_CHARS)}"


def incomplete(stats: CaseStats) -> bool:
    """The case failed only for want of runs (the sweep stopped before its planned runs; none failed)."""
    return not stats.case_passed and stats.runs_not_run > 0 and not stats.failure_reasons


def _cells(stats: CaseStats) -> list[str]:
    low, high = stats.pass_rate_ci
    runs = f"{stats.runs}" if stats.runs_planned in (None, stats.runs) else f"{stats.runs}/{stats.runs_planned}"
    rate = f"{stats.pass_rate:.1f}%" + ("*" if stopped_early(stats) else "")  # * : biased by stopping (footnote)
    verdict = "pass" if stats.case_passed else "incomplete" if incomplete(stats) else "FAIL"
    reason = _top_reason(stats) or (f"{plural(stats.runs_not_run, 'run')} not run" if stats.runs_not_run else "")
    return [verdict, _cut(stats.id, MAX_ID_CHARS), runs, rate, f"{low:.1f}–{high:.1f}%", stats.stability_class.value,
            reason, class_counts(stats.failure_classes)]


_HEADER = ["", "case", "runs", "pass rate", "95% CI", "class", "most common failure", "failure classes"]
_RIGHT = {2, 3, 4}


_SHRINKABLE = ((6, 16), (7, 12), (1, 12))
"""Columns cut to fit a width, in this order, each to no less than its minimum: the most common
failure, the failure classes, the case id."""


def case_rows(report: SweepReport, *, max_rows: int = 30, width: int | None = None) -> list[tuple[str, bool]]:
    """The table as aligned lines (header first), failing and least passing cases first; each
    with whether it is a failing case. Plain text, one line per case: CI logs (no ``width``) keep
    it whole; on a terminal of ``width`` columns the long columns are cut (``…``) to fit, so no
    line wraps mid-word."""
    cases = sorted(report.results, key=lambda c: (c.case_passed, c.pass_rate, c.id))[:max_rows]
    table = [_HEADER, *(_cells(c) for c in cases)]
    widths = [max(len(row[i]) for row in table) for i in range(len(_HEADER))]
    if width is not None:
        table, widths = _fit(table, widths, width)
    lines = []
    for row in table:
        cells = [cell.rjust(widths[i]) if i in _RIGHT else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append(("  ".join(cells).rstrip(), row[0] in ("FAIL", "incomplete")))
    return lines


def _fit(table: list[list[str]], widths: list[int], width: int) -> tuple[list[list[str]], list[int]]:
    """Cut the shrinkable columns until a line (cells joined by two spaces) fits in ``width``."""
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    for column, least in _SHRINKABLE:
        if excess <= 0:
            break
        cut = min(excess, max(widths[column] - least, 0))
        widths[column] -= cut
        excess -= cut
    table = [[_cut(cell, widths[i]) if len(cell) > widths[i] else cell for i, cell in enumerate(row)]
             for row in table]
    return table, widths


def summary_line(report: SweepReport) -> str:
    """``2 passed, 1 failed of 4 cases (1 skipped); 30 runs: 25 passed, 3 failed, 1 error,
    1 timeout (83.3% pass rate); 1 flaky, 1 broken; 12.3s``."""
    s: SweepSummary = report.summary
    by = s.by_status
    runs = [f"{by.get('passed', 0)} passed", f"{by.get('failed', 0)} failed",
            plural(by.get("error", 0), "error"), plural(by.get("timeout", 0), "timeout")]
    cases = f"{s.passed_cases} passed, {s.failed_cases} failed of {plural(s.total_cases, 'case')}"
    if s.skipped_cases:
        cases += f" ({s.skipped_cases} skipped)"
    partial = f"PARTIAL (sweep {report.outcome.status}): " if is_partial(report) else ""
    return (f"{partial}{cases}; {plural(s.total_runs, 'run')}: {', '.join(runs)} ({s.overall_pass_rate:.1f}% pass "
            f"rate); {s.flaky_cases} flaky, {s.broken_cases} broken; {s.duration_ms / 1000:.1f}s")



def print_summary(console: Console, report: SweepReport, *, max_rows: int = 30) -> None:
    """The case table, the cases listed apart (skipped, not run), the gates missed, the totals."""
    width = console.width if console.is_terminal or "COLUMNS" in os.environ else None
    if report.matrix is not None:  # one table, the arms as columns (SPEC 22)
        from farm.matrix.text import table_lines

        for line in table_lines(report, max_rows=max_rows):
            say(console, line, style="red" if " worse" in line else None)
    for text, failing in case_rows(report, max_rows=max_rows, width=width) if report.results and not report.matrix \
            else []:
        say(console, text, style="red" if failing else None)
    if len(report.results) > max_rows:
        say(console, f"… {plural(len(report.results) - max_rows, 'more case')} in the report")
    for line in failure_lines(report) + criteria_lines(report):
        say(console, line)
    if any(stopped_early(c) for c in report.results):
        say(console, f"* {BIASED_NOTE}")
    if report.summary.skipped_ids:
        say(console, f"skipped (skip: true): {_ids(report.summary.skipped_ids)}")
    if report.outcome.stopped:
        not_run = report.outcome.not_run or []
        listed = f": {_ids(not_run)}" if not_run else ""
        cut = [c.id for c in report.results if incomplete(c)]
        partly = f"; {plural(len(cut), 'case')} incomplete: {_ids(cut)}" if cut else ""
        say(console, f"stopped early ({report.outcome.stopped}): {plural(len(not_run), 'case')} not run{listed}"
                     f"{partly}")
    if below_overall_gate(report):
        say(console, f"overall pass rate {report.summary.overall_pass_rate:.1f}% is below "
                     f"--min-overall-pass-rate {float(report.envelope.min_overall_pass_rate or 0) * 100:g}%")
    say(console, summary_line(report))
    if unreachable(report):
        say(console, "the agent could not be reached: every run failed to connect or had its credentials "
                     "refused (exit 3)", style="red")
    fleet = fleet_line(report, always=False)
    if fleet:
        say(console, fleet)


@dataclass
class _Failure:
    """One distinct failure: how many runs, which cases, and the first run that showed it."""

    example: RunResult
    failure_class: str | None
    count: int = 0
    cases: dict[str, None] = field(default_factory=dict)
    """The cases it happened in, in order (a dict: an ordered set)."""


class FailureDigest:
    """``-v``: every distinct failure once, with its count, after the sweep (not once per run).

    Failures are grouped by ``farm.stats.failure_reasons`` (the check and what it expected, or the
    error's type and message), so fifty runs failing alike print as one entry, with its failure class.
    """

    def __init__(self, console: Console, *, max_failures: int = 50) -> None:
        self._console = console
        self._max = max_failures
        self._failures: dict[str, _Failure] = {}
        self._unlisted = 0

    def on_start(self, start: SweepStart) -> None:
        say(self._console, f"sweep {start.sweep_id}: {plural(start.total_cases, 'case')}, "
                           f"{plural(start.total_runs, 'run')} against {start.agent_id}")

    def on_result(self, result: RunResult) -> None:
        for reason, failure_class in classed_reasons(result).items():
            failure = self._failures.get(reason)
            if failure is None:
                if len(self._failures) >= self._max:
                    self._unlisted += 1
                    continue
                failure = self._failures[reason] = _Failure(result, failure_class)
            failure.count += 1
            failure.cases[result.case_id] = None

    def on_case(self, stats: CaseStats) -> None:
        return None

    def on_finish(self, report: SweepReport) -> None:
        self.show()

    def show(self) -> None:
        """Each distinct failure, most frequent first."""
        ranked = sorted(self._failures.items(), key=lambda item: -item[1].count)
        for reason, failure in ranked:
            runs = plural(failure.count, "run")
            klass = f"  [{failure.failure_class}]" if failure.failure_class else ""
            say(self._console, f"{runs} failed: {reason}{klass}", style="bold")
            say(self._console, f"  cases: {_ids(list(failure.cases))}")
            for line in _example(failure.example):
                say(self._console, f"  {line}")
        if self._unlisted:
            say(self._console, f"… and {plural(self._unlisted, 'failed run')} of other kinds "
                               f"(only the first {self._max} kinds are listed)")


def _example(result: RunResult) -> list[str]:
    """The first run that failed this way: what its check said, or its error and traceback."""
    head = f"e.g. {result.case_id} run {result.run} ({run_status(result.status).value})"
    if result.error is not None:
        lines = [f"{head}: {result.error.type}: {result.error.message}"]
        if result.error.traceback:
            lines += result.error.traceback.rstrip("\n").splitlines()
        return lines
    return [f"{head}: {c.name}: {c.message}" for c in result.failed_checks] or [head]


__all__ = ["FailureDigest", "case_rows", "plural", "print_summary", "say", "summary_line"]
