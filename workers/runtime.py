"""What the farm's tasks do, kept out of ``workers/tasks.py`` so the tasks stay thin.

A worker runs many runs at once in a ``threads`` pool; each pool thread owns an asyncio loop and
its own agent adapters (an HTTP client is bound to the loop that made it, and several small
connection pools beat one big one: ARCHITECTURE, "Measured"). Sweep and case data are read
from Redis once per process and cached.

Stopped sweeps (``farm cancel``, ``--fail-fast``): a run not started yet is dropped (nothing
stored, nothing counted), so the sweep drains fast and its report holds what ran. Fail-fast
stops a sweep as soon as a stored run makes its case unable to pass (the local executor's
rule); runs already in flight on other workers still finish and count.

Each stored or dropped run settles once in its case's Redis barrier (``SweepStore.store_run`` /
``settle``); the run that completes the case calls ``fire`` (``workers.tasks`` enqueues
``farm.aggregate``), and so does a redelivered run while the aggregate has not run yet.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from farm.agents.options import AgentOptions
from farm.agents.resolve import AgentPool, AgentRef
from farm.checks.base import JudgeResolver
from farm.distributed import Settled, StoredCase, StoredSweep, SweepStore, Tally, connect
from farm.execute import execute_run
from farm.executors.base import utc_now
from farm.models import ErrorInfo, RunResult, RunStatus
from farm.redis_keys import STOP_FAIL_FAST
from farm.stats import CaseAccumulator, build_report, output_digest, pass_ks

log = logging.getLogger("farm.worker")

RUN_GUARD_S = 5.0
"""Grace past the case timeout before the worker cuts a run off itself (threads pools ignore
Celery's time limits, so this guard is what bounds a hung agent there)."""

STORE_RETRIES = 10
"""Redis command retries (exponential backoff capped at 4 s: about half a minute of outage)."""

_stores: dict[str, SweepStore] = {}
_stores_lock = threading.Lock()


def get_store(url: str) -> SweepStore:
    """The process-wide store for ``url`` (redis-py clients are thread-safe)."""
    with _stores_lock:
        store = _stores.get(url)
        if store is None:
            store = _stores[url] = SweepStore(connect(url, retries=STORE_RETRIES))
        return store


class _SweepCache:
    """Sweeps and cases read once per process; bounded, least recently used out first."""

    def __init__(self, max_sweeps: int = 64, max_cases: int = 4096) -> None:
        self._lock = threading.Lock()
        self._sweeps: OrderedDict[str, StoredSweep] = OrderedDict()
        self._cases: OrderedDict[tuple[str, str], StoredCase] = OrderedDict()
        self._limits = (max_sweeps, max_cases)

    def _get(self, table: OrderedDict[Any, Any], key: Any, limit: int, load: Any) -> Any:
        with self._lock:
            if key in table:
                table.move_to_end(key)
                return table[key]
        value = load()  # outside the lock: two threads may load the same thing, harmlessly
        if value is not None:
            with self._lock:
                table[key] = value
                while len(table) > limit:
                    table.popitem(last=False)
        return value

    def sweep(self, store: SweepStore, sweep_id: str) -> StoredSweep | None:
        return self._get(self._sweeps, sweep_id, self._limits[0], lambda: store.load_sweep(sweep_id))  # type: ignore[no-any-return]

    def case(self, store: SweepStore, sweep_id: str, case_id: str) -> StoredCase | None:
        load = lambda: store.load_case(sweep_id, case_id)  # noqa: E731
        return self._get(self._cases, (sweep_id, case_id), self._limits[1], load)  # type: ignore[no-any-return]


CACHE = _SweepCache()


class _ThreadState:
    """One pool thread's event loop, agent adapters and judges."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pools: dict[AgentOptions, AgentPool] = {}
        self.judges: dict[AgentOptions, JudgeResolver | None] = {}

    def agent(self, options: AgentOptions, ref: AgentRef) -> Any:
        pool = self.pools.get(options)
        if pool is None:
            pool = self.pools[options] = AgentPool(options)
        return pool.get(ref)

    def judge(self, options: AgentOptions) -> JudgeResolver | None:
        if options not in self.judges:
            from farm.agents.judge import create_judge_resolver

            self.judges[options] = create_judge_resolver(options)
        return self.judges[options]

    def reset_loop(self) -> None:
        """After an interrupted run the loop may hold half-done work: start a fresh one."""
        self.pools.clear()
        self.judges.clear()
        self.loop = asyncio.new_event_loop()


_local = threading.local()


def thread_state() -> _ThreadState:
    state = getattr(_local, "state", None)
    if state is None:
        state = _local.state = _ThreadState()
    return state


def _failed_run(case_id: str, run: int, sweep_id: str, status: RunStatus, kind: str, message: str) -> RunResult:
    return RunResult(case_id=case_id, run=run, status=status, sweep_id=sweep_id, started_at=utc_now(),
                     error=ErrorInfo(type=kind, message=message))


def execute(sweep: StoredSweep, stored: StoredCase, run: int, *, interrupts: tuple[type[BaseException], ...] = ()
            ) -> RunResult:
    """One run on this thread's loop, cut off at the case timeout plus a grace; never raises."""
    case, env = stored.case, sweep.env
    state = thread_state()
    try:
        agent = state.agent(sweep.options, stored.agent)
        judges = state.judge(sweep.options)
    except Exception as exc:  # the agent cannot be built here (missing file on this machine, …)
        return _failed_run(case.id, run, sweep.sweep_id, RunStatus.ERROR, type(exc).__name__,
                           f"cannot build agent {stored.agent.label!r} on this worker: {exc}")
    limit = env.case_timeout(case)
    started = time.monotonic()
    try:
        return state.loop.run_until_complete(
            asyncio.wait_for(execute_run(case, run, agent, env, judges=judges), limit + RUN_GUARD_S))
    except BaseException as exc:
        if not isinstance(exc, (TimeoutError, *interrupts)):
            raise
        if not isinstance(exc, TimeoutError):  # raised into the loop from outside: start afresh
            state.reset_loop()
        result = _failed_run(case.id, run, sweep.sweep_id, RunStatus.TIMEOUT, "Timeout",
                             f"run cut off by the worker after {limit:g}s (task time limit)")
        result.duration_ms = round((time.monotonic() - started) * 1000, 3)
        return result


def _record(sweep_id: str, case_id: str, run: int, **extra: Any) -> dict[str, Any]:
    return {"sweep": sweep_id, "case": case_id, "run": run, **extra}


def _summary(result: RunResult, counted: bool) -> dict[str, Any]:
    """The small record a ``farm.run`` returns (Flower shows it; the full result is in Redis)."""
    output = None if result.status in (RunStatus.ERROR, RunStatus.TIMEOUT) else result.output
    return _record(result.sweep_id or "", result.case_id, result.run, status=RunStatus(result.status).value,
                   duration_ms=result.duration_ms, output_digest=output_digest(output), counted=counted)


Fire = Callable[[str, str, str], None]
"""Enqueue ``farm.aggregate(sweep_id, case_id)`` on a queue: (sweep id, case id, queue)."""


def _no_fire(sweep_id: str, case_id: str, queue: str) -> None:
    return None


def run_one(store: SweepStore, sweep_id: str, case_id: str, run: int,
            *, interrupts: tuple[type[BaseException], ...] = (), fire: Fire = _no_fire) -> dict[str, Any]:
    """``farm.run``: run (case, run) unless stopped or already stored; store it once; fire the barrier."""
    sweep = CACHE.sweep(store, sweep_id)
    stored = CACHE.case(store, sweep_id, case_id) if sweep is not None else None
    if sweep is None or stored is None:
        return _record(sweep_id, case_id, run, status="dropped", reason="sweep or case not found (expired?)")
    stop, already = store.before_run(sweep_id, case_id, run)
    if already:  # a redelivery of a run that finished: do not call the agent again
        existing = store.get_run(sweep_id, case_id, run)
        if existing is not None:
            # its first delivery may have died between storing and firing: fire again if still due
            _barrier(store.settle(sweep_id, case_id, run), sweep, stored, fire)
            return _summary(existing, counted=False)
    if stop is not None:
        _barrier(store.settle(sweep_id, case_id, run), sweep, stored, fire)
        return _record(sweep_id, case_id, run, status="dropped", reason=stop)
    result = execute(sweep, stored, run, interrupts=interrupts)
    result.sweep_id = sweep_id
    tally, state = store.store_run(sweep_id, result)
    stopping = tally is not None and sweep.fail_fast and _cannot_pass(tally, stored)
    if stopping and store.stop(sweep_id, STOP_FAIL_FAST):
        log.info("sweep %s: case %s can no longer pass; --fail-fast drops the runs not started", sweep_id, case_id)
    _barrier(state, sweep, stored, fire)
    return _summary(result, tally is not None)


def _barrier(state: Settled, sweep: StoredSweep, stored: StoredCase, fire: Fire) -> None:
    if state.fires(stored.plan.runs):
        fire(sweep.sweep_id, stored.case.id, sweep.queue)


def _cannot_pass(tally: Tally, stored: StoredCase) -> bool:
    """The local executor's rule: even if every missing run passed, the case would fail."""
    return tally.passed + (stored.plan.runs - tally.counted) < stored.plan.required


@dataclass(frozen=True)
class Aggregated:
    """What ``farm.aggregate`` learnt: is the case complete, and is the whole sweep done?"""

    complete: bool
    cases_done: int
    total_cases: int
    queue: str

    @property
    def sweep_done(self) -> bool:
        return self.complete and self.cases_done >= self.total_cases


def aggregate_case(store: SweepStore, sweep_id: str, case_id: str, *, final: bool = False) -> Aggregated | None:
    """``farm.aggregate``: rebuild the case's statistics from its stored runs and store them once.

    Not ``complete`` when runs are missing and the sweep was not stopped (the caller retries);
    ``final`` stores what is there anyway. None when the sweep is gone.
    """
    sweep = CACHE.sweep(store, sweep_id)
    stored = CACHE.case(store, sweep_id, case_id) if sweep is not None else None
    if sweep is None or stored is None:
        return None
    acc = CaseAccumulator(stored.case, stored.plan, pass_k=pass_ks(sweep.metadata))
    for result in store.case_results(sweep_id, case_id, stored.plan.runs):
        acc.add(result)
    stop = store.stop_reason(sweep_id)
    if not acc.done and stop is None and not final:
        return Aggregated(False, 0, len(sweep.case_ids), sweep.queue)
    stats = acc.stats() if acc.count else None
    done = store.store_case(sweep_id, case_id, stats)
    return Aggregated(True, done, len(sweep.case_ids), sweep.queue)


def _render(report: Any, formats: list[str]) -> dict[str, str]:
    rendered = {}
    for fmt in formats:
        try:
            from farm.reports import render_report

            rendered[fmt] = render_report(report, fmt)
        except Exception:  # one bad renderer must not lose the report itself
            log.critical("cannot render the %s report", fmt, exc_info=True)
    return rendered


def report_sweep(store: SweepStore, sweep_id: str) -> bool:
    """``farm.report``: build, render and store the sweep's report once; False if already done."""
    sweep = CACHE.sweep(store, sweep_id)
    if sweep is None or store.get_report(sweep_id) is not None:
        return False
    by_id = store.all_stats(sweep_id)
    metadata = {**sweep.metadata, "completed_at": utc_now()}
    stop = store.stop_reason(sweep_id)
    if stop is not None:
        metadata["stopped"] = stop
    report = build_report(
        [by_id[cid] for cid in sweep.case_ids if cid in by_id],
        duration_ms=round(max(time.time() - sweep.submitted_epoch, 0.0) * 1000, 1),
        runs_per_case=sweep.runs_per_case, environment=sweep.env.describe(), metadata=metadata,
    )
    return store.store_report(sweep_id, report, _render(report, sweep.formats))


DEFAULT_NIGHTLY_ARGS = "--runs 10"


def start_nightly(suite: str, broker_url: str, extra_args: str | None = None) -> str:
    """``farm.nightly``: submit ``farm test -i SUITE --detach --tag trigger=nightly``; return the sweep id.

    The tag makes the worker that runs the sweep's ``farm.report`` run the nightly loop
    (``farm.history.nightly``) when it has a ``FARM_HISTORY_URL``.
    """
    import shlex
    import subprocess
    import sys

    from farm.history.facts import NIGHTLY_TAG, tag_argument

    args = shlex.split(extra_args if extra_args is not None else DEFAULT_NIGHTLY_ARGS)
    cmd = [sys.executable, "-m", "farm", "test", "-i", suite, "--broker", broker_url, "--detach",
           "--tag", tag_argument(NIGHTLY_TAG), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"nightly sweep of {suite} was not submitted (exit {done.returncode}): "
                           f"{done.stderr.strip()[-2000:]}")
    return done.stdout.strip().splitlines()[-1]
