"""Why runs failed, grouped so that a case's top reasons can be counted and compared.

A reason names *what* failed, not what the agent said: a failed check is ``name: expected …``
(the expectation, never the actual output, so fifty different wrong answers to one check are
one reason), an error or timeout is ``status: ErrorType: message``. Reasons are one line and
bounded. A comparison lists the reasons HEAD has that BASE had not (``farm.stats.compare``).
"""

from __future__ import annotations

import json
from typing import Any

from farm.models import FailureReason, RunResult, RunStatus

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


def failure_reasons(result: RunResult) -> list[str]:
    """The distinct reasons ``result`` failed, in check order; empty for a passed or skipped run."""
    status = RunStatus(result.status)
    if status in (RunStatus.PASSED, RunStatus.SKIPPED):
        return []
    if result.error is not None:
        return [_one_line(f"{status.value}: {result.error.type}: {result.error.message}")]
    reasons = []
    for check in result.failed_checks:
        where = f"turn {check.turn} " if check.turn > 1 else ""
        expected = f": expected {_compact(check.expected)}" if check.expected is not None else ""
        reasons.append(_one_line(f"{where}{check.name}{expected}"))
    return list(dict.fromkeys(reasons)) or [status.value]


class ReasonCounter:
    """Counts reasons per run, exactly for the first ``capacity`` distinct ones (bounded memory)."""

    def __init__(self, capacity: int = DEFAULT_MAX_REASONS) -> None:
        self.capacity = capacity
        self._counts: dict[str, int] = {}

    def add(self, result: RunResult) -> None:
        for reason in failure_reasons(result):
            if reason not in self._counts and len(self._counts) >= self.capacity:
                reason = OTHER_REASONS
            self._counts[reason] = self._counts.get(reason, 0) + 1

    def top(self, n: int = TOP_REASONS) -> list[FailureReason]:
        """The ``n`` most frequent reasons, most frequent first (ties: first seen first)."""
        ranked = sorted(self._counts.items(), key=lambda item: -item[1])[:n]
        return [FailureReason(reason=reason, count=count) for reason, count in ranked]
