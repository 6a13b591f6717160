"""The in-process order of an adaptive sweep's runs (``--adaptive``, SPEC 13).

A case planned with a stopping rule needs no more runs once its rule has decided, so runs are
started where they are certainly needed first: a case gets at most as many runs in flight as
its rule needs before it could possibly decide (``CaseAccumulator.runs_needed``), and the next
run goes to the first case in plan order that may take one. Only when no case may (every open
case has what it certainly needs in flight, and a worker would idle) is a run started on
speculation, on the open case with the fewest in flight. A decided case starts no run; it is
finished once its runs in flight are in (they count: they were paid for).

Workers pull from ``runs()`` only when idle, so this is a plain generator: a case decided while
its runs are in flight simply yields nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from farm.plan.sweep_plan import PlannedCase
from farm.stats import CaseAccumulator
from farm.sweep.lifecycle import SweepStop


class AdaptiveQueue:
    """Which run an idle in-process worker starts next, and when a decided case is finished."""

    def __init__(self, cases: Iterable[PlannedCase], accumulators: Mapping[str, CaseAccumulator],
                 stop: SweepStop) -> None:
        self._open = {c.id: c for c in cases}
        """Cases with runs not started yet and no decision, in plan order."""
        self._accumulators = accumulators
        self._stop = stop
        self._started = dict.fromkeys(self._open, 0)
        self._in_flight = dict.fromkeys(self._open, 0)

    def _needs(self, case_id: str) -> int:
        acc = self._accumulators.get(case_id)
        return acc.runs_needed() if acc is not None else 0

    def _next_case(self) -> PlannedCase | None:
        """The first open case that certainly needs another run in flight, dropping decided ones
        on the way (the scan stops early: only cases with runs in flight come before it)."""
        decided, found = [], None
        for case_id, planned in self._open.items():
            needs = self._needs(case_id)
            if needs == 0:
                decided.append(case_id)
            elif self._in_flight[case_id] < needs:
                found = planned
                break
        for case_id in decided:
            del self._open[case_id]
        if found is not None or not self._open:
            return found
        # every open case has what it certainly needs in flight (so there are few of them):
        # a speculative run beats an idle worker
        return self._open[min(self._open, key=lambda cid: self._in_flight[cid])]

    def runs(self) -> Iterator[tuple[PlannedCase, int]]:
        while self._stop.reason is None:
            planned = self._next_case()
            if planned is None:
                return
            case_id = planned.id
            self._started[case_id] += 1
            self._in_flight[case_id] += 1
            if self._started[case_id] >= planned.plan.runs:
                del self._open[case_id]
            yield planned, self._started[case_id]

    def finished(self, case_id: str) -> None:
        """A run of the case is over (counted or not)."""
        self._in_flight[case_id] -= 1

    def settled(self, case_id: str) -> bool:
        """The case is decided and none of its runs is in flight: it can be finished."""
        acc = self._accumulators.get(case_id)
        return acc is not None and acc.decision is not None and self._in_flight[case_id] == 0


__all__ = ["AdaptiveQueue"]
