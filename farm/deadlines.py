"""neuro-san's top-level ``timeout_in_seconds``: one time budget for all the runs of a test.

neuro-san documents it as bounding "the test as a whole … including multiple attempts when a
success_ratio is defined". The budget starts when the case's first run starts; a run not
started when it is spent is not run (the case reports the runs it had), and a run that is
running gets at most what is left. Clock: wall time, so a budget can be shared by processes.
"""

from __future__ import annotations

import threading
import time

from farm.models import Case

__all__ = ["TestBudgets"]


class TestBudgets:
    """The budgets of a sweep's cases, by case id (thread-safe: pool threads share one)."""

    __test__ = False  # not a pytest class

    def __init__(self) -> None:
        self._ends: dict[str, float] = {}
        self._lock = threading.Lock()

    def start(self, case: Case) -> float | None:
        """When the case's budget ends (epoch seconds), starting it on the first call; None: no budget."""
        if case.test_timeout_s is None:
            return None
        with self._lock:
            return self._ends.setdefault(case.id, time.time() + case.test_timeout_s)

    def spent(self, case: Case) -> bool:
        """Whether the case's budget started and is used up (its further runs are not started)."""
        end = self._ends.get(case.id)
        return end is not None and time.time() >= end
