"""neuro-san's top-level ``timeout_in_seconds``: one time budget for all the runs of a test.

neuro-san documents it as bounding "the test as a whole … including multiple attempts when a
success_ratio is defined". The budget starts when the case's first run starts; a run not
started when it is spent is not run (the case reports the runs it had), and a run that is
running gets at most what is left. Clock: wall time, so a budget can be shared by processes.

Waiting for capacity is not running (SPEC 15): while every run of the case in flight waits for a
slot in fleet control, the budget stops (its end moves by the pause); ``waits`` gives each run the
listener its run clock (``farm.run.waiting``) tells.
"""

from __future__ import annotations

import threading
import time

from farm.models import Case

__all__ = ["RunWaits", "TestBudgets"]


class TestBudgets:
    """The budgets of a sweep's cases, by case id (thread-safe: pool threads share one)."""

    __test__ = False  # not a pytest class

    def __init__(self) -> None:
        self._ends: dict[str, float] = {}
        self._lock = threading.Lock()
        self._flight: dict[str, list[float]] = {}
        """Case id → [runs in flight, of them waiting for a slot, when all began waiting (0: not all)]."""

    def waits(self, case: Case) -> RunWaits | None:
        """A run of ``case`` begins: the listener of its waits for a slot (None: the case has no budget)."""
        if case.test_timeout_s is None:
            return None
        with self._lock:
            self._flight.setdefault(case.id, [0, 0, 0.0])[0] += 1
        return RunWaits(self, case.id)

    def _change(self, case_id: str, running: int, waiting: int) -> None:
        """Runs in flight and waiting change; the budget stops while all of them wait."""
        with self._lock:
            flight = self._flight[case_id]
            if flight[2] and case_id in self._ends:
                self._ends[case_id] += time.time() - flight[2]  # the pause so far does not count
            flight[0] += running
            flight[1] += waiting
            flight[2] = time.time() if flight[0] > 0 and flight[1] == flight[0] else 0.0

    def start(self, case: Case) -> float | None:
        """When the case's budget ends (epoch seconds), starting it on the first call; None: no budget."""
        if case.test_timeout_s is None:
            return None
        with self._lock:
            return self._ends.setdefault(case.id, time.time() + case.test_timeout_s)

    def end(self, case: Case) -> float | None:
        """When the case's budget ends now (epoch seconds; moved by its pauses); None: not started."""
        with self._lock:
            return self._ends.get(case.id)

    def spent(self, case: Case) -> bool:
        """Whether the case's budget started and is used up (its further runs are not started)."""
        end = self._ends.get(case.id)
        return end is not None and time.time() >= end


class RunWaits:
    """One run's waits for a slot, told to its case's budget (``RunClock``'s listener)."""

    def __init__(self, budgets: TestBudgets, case_id: str) -> None:
        self.budgets = budgets
        self.case_id = case_id

    def paused(self) -> None:
        self.budgets._change(self.case_id, 0, 1)

    def resumed(self) -> None:
        self.budgets._change(self.case_id, 0, -1)

    def finished(self) -> None:
        self.budgets._change(self.case_id, -1, 0)
