"""``farm.run``: one run of one case on a worker, stored once, settled in its case's barrier.

Stopped sweeps (``farm cancel``, ``--fail-fast``): a run not started yet is dropped (nothing
stored, nothing counted), so the sweep drains fast and its report holds what ran. Fail-fast
stops a sweep as soon as a stored run makes its case unable to pass (``CasePlan.cannot_pass``,
the local executor's rule); runs already in flight on other workers still finish and count.

Fleet control (SPEC 13): each run is made under the sweep's ``FleetRuntime``; a run whose call
it refused (budget, quota) is dropped and stops the sweep (``budget``/``quota``), and a run of a
case its adaptive rule has decided (``farm.fleet.redis_runtime``) is dropped like a stopped one.

Each stored or dropped run settles once in its case's Redis barrier (``SweepStore.store_run`` /
``settle``); the run that completes the case calls ``fire`` (``workers.tasks`` enqueues
``farm.aggregate``), and so does a redelivered run while the aggregate has not run yet.

Poison runs (SPEC 11): each run sets its start marker as it starts and clears it once settled
(``workers.crashes``); a run that was in flight at two worker deaths runs alone in a process of
its own (``workers.isolated``), which records it ``crashed`` if that process dies too.
"""

from __future__ import annotations

import functools
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

from farm.errors import AGENT_BUILD_FAILED
from farm.failures import classify_run
from farm.fleet.redis_runtime import is_decided, mark_decided
from farm.fleet.runtime import FleetRuntime
from farm.lifecycle import StopReason, run_guarded
from farm.models import ErrorInfo, RunResult, RunStatus
from farm.plan import PlannedCase, SweepPlan, utc_now
from farm.redis_memory import until_writable
from farm.stats import output_digest
from farm.store import Settled, SweepStore
from workers.context import CACHE, crash_book, store_url, thread_state
from workers.isolated import run_isolated

log = logging.getLogger("farm.worker")

Fire = Callable[[str, str, str], None]
"""Enqueue ``farm.aggregate(sweep_id, case_id)`` on a queue: (sweep id, case id, queue)."""


def _no_fire(sweep_id: str, case_id: str, queue: str) -> None:
    return None


def _failed_run(case_id: str, run: int, sweep_id: str, status: RunStatus, kind: str, message: str) -> RunResult:
    result = RunResult(case_id=case_id, run=run, status=status, sweep_id=sweep_id, started_at=utc_now(),
                       error=ErrorInfo(type=kind, message=message))
    result.failure_class, result.failed_turn = classify_run(result)
    return result


def execute(sweep: SweepPlan, planned: PlannedCase, run: int, fleet: FleetRuntime, *,
            interrupts: tuple[type[BaseException], ...] = ()) -> RunResult | None:
    """One run on this thread's loop under the shared run guard and the sweep's fleet control;
    never raises; None when fleet control refused a call (budget, quota)."""
    case, state = planned.case, thread_state()
    try:
        agent = state.agent(sweep.options, planned.agent, fleet)
        judges = state.judge(sweep.options, fleet)
    except Exception as exc:  # the agent cannot be built here (missing key or module on this machine, …)
        return _failed_run(case.id, run, sweep.sweep_id, RunStatus.ERROR, AGENT_BUILD_FAILED,
                           f"cannot build agent {planned.agent.label!r} on worker {socket.gethostname()}: "
                           f"{type(exc).__name__}: {exc}")
    started = time.monotonic()
    call = functools.partial(run_guarded, case, run, agent, sweep.env, judges=judges,
                             simulators=state.simulator(sweep.options))
    try:
        return state.loop.run_until_complete(fleet.run(planned, call))
    except interrupts:  # a time limit raised into the loop from outside: start afresh
        state.reset_loop()
        limit = sweep.env.case_timeout(case)
        result = _failed_run(case.id, run, sweep.sweep_id, RunStatus.TIMEOUT, "Timeout",
                             f"run cut off by the worker after {limit:g}s (task time limit)")
        result.duration_ms = round((time.monotonic() - started) * 1000, 3)
        return result


def _record(sweep_id: str, case_id: str, run: int, **extra: Any) -> dict[str, Any]:
    # status first: Flower's task list shows the start of the result (``{'status': 'failed', …``)
    return {**extra, "sweep": sweep_id, "case": case_id, "run": run}


def _summary(result: RunResult, counted: bool) -> dict[str, Any]:
    """The small record a ``farm.run`` returns (Flower shows it; the full result is in Redis)."""
    output = None if result.status in (RunStatus.ERROR, RunStatus.TIMEOUT) else result.output
    return _record(result.sweep_id or "", result.case_id, result.run, status=RunStatus(result.status).value,
                   duration_ms=result.duration_ms, output_digest=output_digest(output), counted=counted)


def run_one(store: SweepStore, sweep_id: str, case_id: str, run: int,
            *, interrupts: tuple[type[BaseException], ...] = (), fire: Fire = _no_fire) -> dict[str, Any]:
    """``farm.run``: run (case, run) unless stopped or already stored; store it once; fire the barrier.

    While Redis refuses writes for memory, it waits and starts over (``farm.redis_memory``): the
    run is stored once whenever memory returns, and its message stays unacknowledged meanwhile.
    """
    return until_writable(lambda: _run_one(store, sweep_id, case_id, run, interrupts=interrupts, fire=fire),
                          f"run {case_id}/{run} of sweep {sweep_id}")


def _run_one(store: SweepStore, sweep_id: str, case_id: str, run: int,
             *, interrupts: tuple[type[BaseException], ...], fire: Fire) -> dict[str, Any]:
    sweep = CACHE.sweep(store, sweep_id)
    planned = CACHE.case(store, sweep_id, case_id) if sweep is not None else None
    if sweep is None or planned is None:
        return _record(sweep_id, case_id, run, status="dropped", reason="sweep or case not found (expired?)")
    stop, already = store.before_run(sweep_id, case_id, run)
    book = crash_book(store)
    if already:  # a redelivery of a run that finished: do not call the agent again
        existing = store.get_run(sweep_id, case_id, run)
        if existing is not None:
            book.settled(sweep_id, case_id, run)
            # its first delivery may have died between storing and firing: fire again if still due
            _barrier(store.settle(sweep_id, case_id, run), sweep, planned, fire)
            return _summary(existing, counted=False)
    if stop is None and planned.plan.adaptive is not None and is_decided(store, sweep_id, case_id):
        stop = "decided"  # its adaptive rule has decided: the run is not needed
    if stop is not None:
        _barrier(store.settle(sweep_id, case_id, run), sweep, planned, fire)
        return _record(sweep_id, case_id, run, status="dropped", reason=stop)
    fleet = CACHE.fleet(store, sweep)
    start = book.start(sweep_id, case_id, run)
    if start.isolate:  # in flight at two worker deaths: once more, alone (SPEC 11)
        log.warning("sweep %s: run %s/%d was in flight when %d worker processes died; it runs alone "
                    "in a process of its own", sweep_id, case_id, run, start.deaths)
        result = run_isolated(store_url(store), store.ttl, sweep, planned, run)
    else:
        result = execute(sweep, planned, run, fleet, interrupts=interrupts)
    if result is None:  # fleet control refused a call: the run is dropped, and the sweep stops
        if store.stop(sweep_id, fleet.stop_reason):
            log.warning("sweep %s: %s; the runs not started are dropped", sweep_id, fleet.stop_message)
        _barrier(store.settle(sweep_id, case_id, run), sweep, planned, fire)
        book.settled(sweep_id, case_id, run)
        return _record(sweep_id, case_id, run, status="dropped", reason=fleet.stop_reason)
    result.sweep_id = sweep_id
    tally, state = store.store_run(sweep_id, result)
    book.settled(sweep_id, case_id, run)
    stopping = tally is not None and sweep.fail_fast and planned.plan.cannot_pass(tally.counted, tally.passed)
    if stopping and store.stop(sweep_id, StopReason.FAIL_FAST):
        log.info("sweep %s: case %s can no longer pass; --fail-fast drops the runs not started", sweep_id, case_id)
    rule = planned.plan.stopping_rule()
    if tally is not None and rule is not None and rule.decide(tally.passed, tally.counted - tally.passed):
        mark_decided(store, sweep_id, case_id)
    _barrier(state, sweep, planned, fire)
    return _summary(result, tally is not None)


def _barrier(state: Settled, sweep: SweepPlan, planned: PlannedCase, fire: Fire) -> None:
    if state.fires(planned.plan.runs):
        fire(sweep.sweep_id, planned.id, sweep.queue)


__all__ = ["Fire", "execute", "run_one"]
