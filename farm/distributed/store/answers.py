"""What the store answers: a sweep's progress, a case's tally, the barrier's state, an event.

Plain values, apart from ``farm.distributed.store.sweep_store`` so its module holds the store's operations only.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SweepProgress:
    """A sweep in flight, as ``farm status`` shows it."""

    sweep_id: str
    submitted_epoch: float
    agent_id: str
    queue: str
    runs_done: int
    total_runs: int
    cases_done: int
    total_cases: int
    stopped: str | None
    published: int | None = None
    """Runs published (the publish cursor); None when the plan was never stored whole."""
    publisher: bool = False
    """A publisher holds the sweep's lease (False once publishing is done, or its publisher vanished)."""


@dataclass(frozen=True)
class Tally:
    """A case's runs counted so far and how many passed (kept by Redis, for fail-fast)."""

    counted: int
    passed: int


@dataclass(frozen=True)
class RunStart:
    """What a run learnt as it started on a worker (``SweepStore.begin_run``)."""

    stop: str | None
    """The sweep's stop reason, if it was stopped (the run is then dropped)."""
    stored: bool
    """The run is stored already (a redelivery of a finished run)."""
    deaths: int
    """Worker processes that died while this run was in flight (``workers.crashes``)."""
    duplicate: bool
    """A live worker elsewhere has the run in flight too (a concurrent duplicate delivery)."""
    in_flight: int = 1
    """The sweep's runs in flight on every worker as this one began, itself included (SPEC 25)."""


@dataclass(frozen=True)
class Settled:
    """A case's barrier after one of its runs settled (stored, or dropped by a stopped sweep)."""

    first: bool
    """This call settled the run (False: a redelivery of a run settled before)."""
    settled: int
    """Runs of the case settled so far (each counted once)."""
    case_done: bool
    """The case's ``farm.aggregate`` has stored its statistics (asked of Redis only when it matters:
    the case complete and this call not the one that settled the run; else False)."""
    count: int = field(default=0, compare=False)
    """Runs of the whole sweep settled, as this call's count returned (0: it settled nothing)."""

    def fires(self, runs: int) -> bool:
        """Enqueue ``farm.aggregate``? The run that completes the case does; so does a redelivered
        run while the aggregate has not run (the first delivery may have died before enqueuing)."""
        return self.settled >= runs and (self.first or not self.case_done)


@dataclass(frozen=True)
class Event:
    """One entry of a sweep's stream: ``start``, ``result``, ``case``, ``stopped`` or ``finish``."""

    id: str
    type: str
    data: str | None


__all__ = ["Event", "RunStart", "Settled", "SweepProgress", "Tally"]
