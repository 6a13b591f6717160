"""A case's failed runs walked once for the reports that list them: JUnit's ``<failure>`` and
``<error>`` text, Markdown's **Failures**. Each renderer only formats what this gives it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from farm.durations import format_ms
from farm.models import CaseStats, RunDetail, RunStatus

__all__ = ["FailedCheck", "FailedRun", "failed_run", "failing_runs"]


@dataclass(frozen=True)
class FailedCheck:
    """One failed check of a run: its name, its message ('failed' when it has none), and the
    expected and actual values when it had an expected value (``shows_values``)."""

    name: str
    message: str
    expected: Any
    actual: Any
    shows_values: bool


@dataclass(frozen=True)
class FailedRun:
    """What a report says of one failed run: ``head`` (``2 (failed, 1.20s, 3 in flight)``, after
    the renderer's word for a run), the error line of a run that errored or timed out (None: its
    failed checks say what failed), and those checks."""

    detail: RunDetail
    head: str
    error: str | None
    checks: list[FailedCheck]


def failing_runs(stats: CaseStats) -> list[RunDetail]:
    """The case's kept runs that failed (neither passed nor skipped), in the order kept."""
    return [d for d in stats.run_details if d.status not in (RunStatus.PASSED, RunStatus.SKIPPED)]


def failed_run(detail: RunDetail) -> FailedRun:
    """One failed run as the reports list it."""
    load = "" if detail.in_flight is None else f", {detail.in_flight} in flight"
    head = f"{detail.run} ({detail.status.value}, {format_ms(detail.duration_ms)}{load})"
    if detail.error:
        return FailedRun(detail, head, detail.error_line, [])
    checks = [FailedCheck(c.name, c.message or "failed", c.expected, c.actual, c.expected is not None)
              for c in detail.failed_checks]
    return FailedRun(detail, head, None, checks)
