"""Why runs failed, grouped so that a case's top reasons can be counted and compared.

A reason names *what* failed, not what the agent said: a failed check is ``name: expected …``
(the expectation, never the actual output, so fifty different wrong answers to one check are
one reason), an error or timeout is ``status: ErrorType: message``. Reasons are one line and
bounded. A comparison lists the reasons HEAD has that BASE had not (``farm.stats.compare``).

Each reason also has its failure class (``farm.models.failure_class``, SPEC 14.2): the class of its failed
check, or of the run's error. A class groups failures coarsely, a reason finely; a reason
always falls in one class.
"""

from __future__ import annotations

import json
from typing import Any

from farm.models import FailureReason, RunResult, RunStatus, run_status
from farm.models.failure_class import classify_check, classify_error

MAX_REASON_CHARS = 160
"""A reason is cut to this many characters."""

DEFAULT_MAX_REASONS = 32
"""Distinct reasons counted exactly per case; later newcomers are counted as ``OTHER_REASONS``."""

TOP_REASONS = 5
"""Reasons kept per case in its statistics."""

OTHER_REASONS = "(other reasons)"


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_REASON_CHARS else flat[: MAX_REASON_CHARS - 1] + "…"


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def classed_reasons(result: RunResult) -> dict[str, str | None]:
    """The distinct reasons ``result`` failed, in check order, each with its failure class; empty
    for a passed or skipped run."""
    status = run_status(result.status)
    if status in (RunStatus.PASSED, RunStatus.SKIPPED):
        return {}
    if result.error is not None:
        reason = _one_line(f"{status.value}: {result.error.type}: {result.error.message}")
        return {reason: result.failure_class or classify_error(result.error)}
    reasons: dict[str, str | None] = {}
    for check in result.failed_checks:
        where = f"turn {check.turn} " if check.turn > 1 else ""
        expected = f": expected {_compact(check.expected)}" if check.expected is not None else ""
        reasons.setdefault(_one_line(f"{where}{check.name}{expected}"), classify_check(check))
    return reasons or {status.value: result.failure_class}


def failure_reasons(result: RunResult) -> list[str]:
    """The distinct reasons ``result`` failed, in check order; empty for a passed or skipped run."""
    return list(classed_reasons(result))


class ReasonCounter:
    """Counts reasons per run, exactly for the first ``capacity`` distinct ones (bounded memory)."""

    def __init__(self, capacity: int = DEFAULT_MAX_REASONS) -> None:
        self.capacity = capacity
        self._counts: dict[str, int] = {}
        self._classes: dict[str, str | None] = {}

    def add(self, result: RunResult) -> None:
        for reason, failure_class in classed_reasons(result).items():
            if reason not in self._counts and len(self._counts) >= self.capacity:
                reason, failure_class = OTHER_REASONS, None
            self._counts[reason] = self._counts.get(reason, 0) + 1
            self._classes.setdefault(reason, failure_class)

    def top(self, n: int = TOP_REASONS) -> list[FailureReason]:
        """The ``n`` most frequent reasons, most frequent first (ties: first seen first)."""
        ranked = sorted(self._counts.items(), key=lambda item: -item[1])[:n]
        return [FailureReason(reason=reason, count=count, failure_class=self._classes[reason])
                for reason, count in ranked]
