"""``farm.run``: one run of one case on a worker, stored once, settled in its case's barrier.

Stopped sweeps (``farm cancel``, ``--fail-fast``): a run not started yet is dropped (nothing
stored, nothing counted), so the sweep drains fast and its report holds what ran. Fail-fast
stops a sweep as soon as a stored run makes its case unable to pass (``CasePlan.cannot_pass``,
the local executor's rule); runs already in flight on other workers still finish and count.

Fleet control (SPEC 13): each run is made under the sweep's ``FleetRuntime``; a run whose call
it refused (budget, quota) is dropped and stops the sweep (``budget``/``quota``), and a run of a
case its adaptive rule has decided (``farm.distributed.fleet.runtime``) is dropped like a stopped one.

Each stored or dropped run settles once in its case's Redis barrier (``SweepStore.store_run`` /
``settle``); the run that completes the case calls ``fire`` (``workers.tasks`` enqueues
``farm.aggregate``), and so does a redelivered run while the aggregate has not run yet.

Poison runs (SPEC 11): each run sets its marker as it begins and the step that settles it clears
it (``workers.crashes``); a run that was in flight at two worker deaths runs alone in a process of
its own (``workers.isolated``), which records it ``crashed`` if that process dies too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from farm.distributed.fleet.runtime import is_decided, mark_decided
from farm.distributed.store.memory import until_writable
from farm.distributed.store.sweep_store import Settled, SweepStore, Tally
from farm.models import RunResult, RunStatus, run_status
from farm.plan.sweep_plan import PlannedCase, SweepPlan
from farm.stats import output_digest
from farm.sweep.lifecycle import StopReason
from workers.attempt import attempt_run
from workers.context import CACHE, store_url
from workers.crashes import ISOLATE_AFTER_DEATHS, holder
from workers.isolated import run_isolated

log = logging.getLogger("farm.worker")

HOLDER_POLL_S = 0.5
"""How often a redelivered copy waiting on a live holder (``await_holder_s``) looks again."""

Fire = Callable[[str, str, str], None]
"""Enqueue ``farm.aggregate(sweep_id, case_id)`` on a queue: (sweep id, case id, queue)."""


def _no_fire(sweep_id: str, case_id: str, queue: str) -> None:
    return None


class InFlightHere:
    """The runs this worker process has in flight. A killed worker's message redelivered and the
    reconciler's copy of the same run can both reach one surviving process; its run marker then
    names this very process as the holder, so only this set tells the second copy that the run
    is being made here (the first copy settles it: paid once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: set[tuple[str, str, int]] = set()

    def take(self, sweep_id: str, case_id: str, run: int) -> bool:
        """Hold the run (False: this process holds it already)."""
        with self._lock:
            if (sweep_id, case_id, run) in self._runs:
                return False
            self._runs.add((sweep_id, case_id, run))
            return True

    def release(self, sweep_id: str, case_id: str, run: int) -> None:
        with self._lock:
            self._runs.discard((sweep_id, case_id, run))


IN_FLIGHT_HERE = InFlightHere()


def _record(sweep_id: str, case_id: str, run: int, **extra: Any) -> dict[str, Any]:
    # status first: Flower's task list shows the start of the result (``{'status': 'failed', …``)
    return {**extra, "sweep": sweep_id, "case": case_id, "run": run}


def _summary(result: RunResult, counted: bool) -> dict[str, Any]:
    """The small record a ``farm.run`` returns (Flower shows it; the full result is in Redis)."""
    output = None if result.status in (RunStatus.ERROR, RunStatus.TIMEOUT) else result.output
    return _record(result.sweep_id or "", result.case_id, result.run, status=run_status(result.status).value,
                   duration_ms=result.duration_ms, output_digest=output_digest(output), counted=counted)


def run_one(store: SweepStore, sweep_id: str, case_id: str, run: int,
            *, interrupts: tuple[type[BaseException], ...] = (), fire: Fire = _no_fire,
            held_s: Callable[[SweepPlan], float] | None = None, await_holder_s: float = 0.0) -> dict[str, Any]:
    """``farm.run``: run (case, run) unless stopped or already stored; store it once; fire the barrier.

    While Redis refuses writes for memory, it waits and starts over (``farm.distributed.store.memory``): the
    run is stored once whenever memory returns, and its message stays unacknowledged meanwhile.
    Every delivery asks whether its run is stored already (a first one too: ``begin_run``).
    ``held_s``: how long a live worker's run of the sweep stays in flight (``Delivery.held_s``);
    a copy that finds the run in flight on a live worker within it is dropped, the holder settles
    it. ``await_holder_s`` (RabbitMQ's redelivery, which comes at once, before a killed consumer's
    heartbeat expires): such a copy first waits that long (a heartbeat's TTL) for the holder's
    heartbeat to lapse (it died: the copy runs) or the run to be stored; a holder still beating
    after it is alive (its connection dropped, not its process) and settles the run: paid once.
    A copy reaching the process that is making the run is always dropped (``InFlightHere``).
    """

    def attempt() -> dict[str, Any]:
        return _run_one(store, sweep_id, case_id, run, interrupts=interrupts, fire=fire, held_s=held_s,
                        await_holder_s=await_holder_s)

    if not IN_FLIGHT_HERE.take(sweep_id, case_id, run):
        return _record(sweep_id, case_id, run, status="dropped", reason="in flight in this worker")
    try:
        return until_writable(attempt, f"run {case_id}/{run} of sweep {sweep_id}")
    finally:
        IN_FLIGHT_HERE.release(sweep_id, case_id, run)


def _run_one(store: SweepStore, sweep_id: str, case_id: str, run: int, *, interrupts: tuple[type[BaseException], ...],
             fire: Fire, held_s: Callable[[SweepPlan], float] | None, await_holder_s: float) -> dict[str, Any]:
    sweep = CACHE.sweep(store, sweep_id)
    planned = CACHE.case(store, sweep_id, case_id) if sweep is not None else None
    if sweep is None or planned is None:
        return _record(sweep_id, case_id, run, status="dropped", reason="sweep or case not found (expired?)")
    runs = planned.plan.runs
    held = None if held_s is None else held_s(sweep)
    begun = store.begin_run(sweep_id, case_id, run, holder(store), held_s=held)
    give_up = time.monotonic() + await_holder_s
    while begun.duplicate and time.monotonic() < give_up:  # alive, or died a moment ago: its heartbeat tells
        time.sleep(HOLDER_POLL_S)
        begun = store.begin_run(sweep_id, case_id, run, holder(store), held_s=held)
    if begun.duplicate and held_s is not None:  # a live worker has this run in flight: it settles it (paid once)
        return _record(sweep_id, case_id, run, status="dropped", reason="in flight on another worker")
    stop = begun.stop
    if begun.stored:  # a copy of a run that finished: do not call the agent again
        existing = store.get_run(sweep_id, case_id, run)
        if existing is not None:
            # its first delivery may have died between storing and firing: fire again if still due
            _barrier(store.settle(sweep_id, case_id, run, runs), sweep, planned, fire)
            return _summary(existing, counted=False)  # settled before: its count is not known here
    if stop is None and planned.plan.adaptive is not None and is_decided(store, sweep_id, case_id):
        stop = "decided"  # its adaptive rule has decided: the run is not needed
    if stop is not None:
        state = _barrier(store.settle(sweep_id, case_id, run, runs), sweep, planned, fire)
        return _record(sweep_id, case_id, run, status="dropped", reason=stop, sweep_settled=state.count)
    fleet = CACHE.fleet(store, sweep)
    if begun.deaths >= ISOLATE_AFTER_DEATHS:  # in flight at two worker deaths: once more, alone (SPEC 11)
        log.warning("sweep %s: run %s/%d was in flight when %d worker processes died; it runs alone "
                    "in a process of its own", sweep_id, case_id, run, begun.deaths)
        result = run_isolated(store_url(store), store.ttl, sweep, planned, run)
    else:
        result = attempt_run(sweep, planned, run, fleet, interrupts=interrupts)
    if fleet.stopped is not None and store.stop(sweep_id, fleet.stop_reason):  # a call was refused: the sweep stops
        log.warning("sweep %s: %s; the runs not started are dropped", sweep_id, fleet.stop_message)
    if result is None:  # it did not run (refused, or no slot in time, before its first call): dropped
        state = _barrier(store.settle(sweep_id, case_id, run, runs), sweep, planned, fire)
        return _record(sweep_id, case_id, run, status="dropped",
                       reason=fleet.stop_reason if fleet.stopped is not None else "queue_wait",
                       sweep_settled=state.count)
    result = result.model_copy(update={"sweep_id": sweep_id, "in_flight": begun.in_flight})  # fleet-wide (SPEC 25)
    tally, state = store.store_run(sweep_id, result, runs)
    if tally is not None:
        _judge_the_case(store, sweep, planned, tally)
    _barrier(state, sweep, planned, fire)
    return {**_summary(result, tally is not None), "sweep_settled": state.count}


def _judge_the_case(store: SweepStore, sweep: SweepPlan, planned: PlannedCase, tally: Tally) -> None:
    """After a counted run: --fail-fast stops a case that can no longer pass, an adaptive rule
    marks its case decided."""
    if sweep.fail_fast and planned.plan.cannot_pass(tally.counted, tally.passed) \
            and store.stop(sweep.sweep_id, StopReason.FAIL_FAST):
        log.info("sweep %s: case %s can no longer pass; --fail-fast drops the runs not started",
                 sweep.sweep_id, planned.id)
    rule = planned.plan.stopping_rule()
    if rule is not None and rule.decide(tally.passed, tally.counted - tally.passed):
        mark_decided(store, sweep.sweep_id, planned.id)


def _barrier(state: Settled, sweep: SweepPlan, planned: PlannedCase, fire: Fire) -> Settled:
    if state.fires(planned.plan.runs):
        fire(sweep.sweep_id, planned.id, sweep.queue)
    return state


__all__ = ["IN_FLIGHT_HERE", "Fire", "InFlightHere", "run_one"]
