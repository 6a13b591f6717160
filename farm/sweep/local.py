"""The in-process executor (the default): runs a sweep on an asyncio loop in this process.

``parallel`` worker coroutines pull (case, run) pairs from one iterator, so memory stays flat
however many runs a sweep has, and a slow synchronous agent (run in its own thread by the
python adapter) never blocks the others. It runs each run through the same guard, accumulator
and sweep finish (``farm.sweep.lifecycle``) as the Celery workers. A stop request (``SweepStop``: a
signal, fail-fast) ends scheduling; an interrupted sweep abandons its runs in flight after a
grace, and every sweep, stopped or not, ends in a report of what ran. Fleet control
(``farm.fleet.runtime``) gives the adapters their limiter and wrappers (those ``prepare_sweep``
built and checked, ``farm.agents.built``: nothing is built twice) and wraps each run: a run
whose call it refused (budget, quota) is not counted and stops the sweep. An adaptive sweep takes
its runs from ``farm.sweep.adaptive`` and finishes a case once it is decided. When the sweep's
run journal can give the run details back (``farm.sweep.journal.journal_for``), a finished case drops
them and the report reads them from there as it is written: memory stays flat in runs.

The workers start one at a time, each making its first run up to its first wait (an HTTP agent:
its request sent) before the next starts. Started all at once, a hundred runs each prepared
their request before the first one left, their answers came back together, and every wave of
the sweep queued on the CPU: 1,000 runs of a 100 ms HTTP agent at 100 in flight took 1.31–1.41 s
that way, 1.12–1.23 s started one at a time (runs of 103 ms instead of 112–114, median), which
also spares an agent's server a hundred connections opened in the same instant.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import farm.collector as collector
from farm.agents.built import BuiltAdapters
from farm.agents.judge import create_judge_resolver
from farm.agents.resolve import AgentPool
from farm.fleet.runtime import local_runtime
from farm.models import CaseStats, RunResult, SweepReport
from farm.models.base import utc_now
from farm.plan.sweep_plan import PlannedCase, SweepPlan, plan_runs
from farm.reports.details import attach_details
from farm.run.simulators import create_simulator_pool
from farm.settings import DEFAULT_STOP_GRACE_S
from farm.stats import CaseAccumulator, pass_ks
from farm.stats.ramp import RampTally
from farm.sweep.adaptive import AdaptiveQueue
from farm.sweep.deadlines import TestBudgets
from farm.sweep.executor import Executor
from farm.sweep.journal import journal_for
from farm.sweep.lifecycle import StopReason, SweepStop, finish_sweep, run_guarded, start_event
from farm.sweep.observers import SweepObserver


class _Sweep:
    """State of one in-process sweep."""

    def __init__(self, plan: SweepPlan, observer: SweepObserver, stop: SweepStop,
                 adapters: BuiltAdapters | None) -> None:
        self.plan = plan
        self.observer = observer
        self.stop = stop
        self.fleet = local_runtime(plan)
        if adapters is not None:  # built (and checked) by prepare_sweep: hooked to fleet control, not built again
            self.pool, self.judges = adapters.hooked(plan.options, self.fleet.hooks)
        else:
            self.pool = AgentPool(plan.options, self.fleet.hooks)
            self.judges = create_judge_resolver(plan.options, self.fleet.hooks)
        pass_k, semantic = pass_ks(plan.envelope), plan.semantic
        self.accumulators = {
            c.id: CaseAccumulator(c.case, c.plan, max_details=plan.max_run_details, pass_k=pass_k, semantic=semantic)
            for c in plan.cases
        }
        self.finished: dict[str, CaseStats] = {}
        for ref in dict.fromkeys(c.agent for c in plan.cases):
            self.pool.get(ref)  # fail on a bad agent before anything runs
        adaptive = any(c.plan.adaptive is not None for c in plan.cases)
        self.adaptive = AdaptiveQueue(plan.cases, self.accumulators, stop) if adaptive else None
        self.simulators = create_simulator_pool(plan.options, self.fleet.hooks)
        self.budgets = TestBudgets()
        self.details = journal_for(plan.sweep_id) if plan.max_run_details else None
        self.in_flight = 0
        self.ramp = RampTally(plan.ramp) if plan.ramp else None
        """Runs begun and not finished (``RunResult.in_flight``: a run waiting for a rate-limit slot counts)."""

    def runs(self, level: int = 0) -> Iterator[tuple[PlannedCase, int]]:
        """The runs to make; with ``--ramp``, those of the ``level``-th concurrency (0-based)."""
        if self.adaptive is not None:
            yield from self.adaptive.runs()
            return
        if self.ramp is None:  # a matrix's runs interleaved across its arms (farm.matrix.schedule)
            made = plan_runs(self.plan)
        else:
            made = ((planned, run) for planned in self.plan.cases for run in self._level_runs(planned, level))
        for planned, run in made:
            if self.stop.reason is not None:
                return
            if not self.budgets.spent(planned.case):  # neuro-san's test timeout: the rest is not run
                yield planned, run

    def _level_runs(self, planned: PlannedCase, level: int) -> range:
        """A case's run numbers at ``level``: all of them without a ramp; with one, those
        ``RampTally.level_of`` puts there."""
        runs = range(1, planned.plan.runs + 1)
        if self.ramp is None:
            return runs
        at = [run for run in runs if self.ramp.level_of(run, planned.plan.runs) == level]
        return range(at[0], at[-1] + 1) if at else range(0)

    async def worker(self, queue: Iterator[tuple[PlannedCase, int]]) -> None:
        for planned, run in queue:
            agent = self.pool.get(planned.agent)
            not_after, waits = self.budgets.start(planned.case), self.budgets.waits(planned.case)
            self.in_flight += 1
            began = self.in_flight  # the sweep's runs in flight as this one begins, itself included (SPEC 25)
            try:
                result = await self.fleet.run(planned, functools.partial(
                    run_guarded, planned.case, run, agent, self.plan.env, judges=self.judges,
                    simulators=self.simulators, not_after=not_after), waits)
            finally:
                self.in_flight -= 1
                if waits is not None:
                    waits.finished()
            if result is not None:
                result.in_flight = began
                if self.ramp is not None:
                    self.ramp.add(result, planned.plan.runs)
            if self.adaptive is not None:
                self.adaptive.finished(planned.id)
            if result is not None:  # None: it did not run (refused or starved before its first call)
                self.record(result)
            if self.fleet.stopped is not None:  # fleet control refused a call (budget, quota): the sweep stops
                self.stop.request(StopReason(self.fleet.stop_reason))
            # A run of an agent that answers without suspending never gives the loop a turn:
            # yield once per run, so workers take turns and the loop drops cancelled timers.
            await asyncio.sleep(0)

    def record(self, result: RunResult) -> None:
        acc = self.accumulators[result.case_id]
        if not acc.add(result):
            return
        self.observer.on_result(result)
        if self.plan.fail_fast and acc.cannot_pass:
            self.stop.request(StopReason.FAIL_FAST)
        if acc.done or (self.adaptive is not None and self.adaptive.settled(result.case_id)):
            self._finish_case(result.case_id)

    def _finish_case(self, case_id: str) -> None:
        stats = self.accumulators.pop(case_id).stats()
        self.observer.on_case(stats)
        self.finished[case_id] = stats if self.details is None else stats.model_copy(update={"run_details": []})

    def flush_partial(self) -> None:
        """A stopped sweep: report the cases that had runs when scheduling stopped."""
        for case_id in [cid for cid, acc in self.accumulators.items() if acc.count]:
            self._finish_case(case_id)

    async def aclose(self) -> None:
        await self.pool.aclose()
        await self.simulators.aclose()
        close_judges = getattr(self.judges, "aclose", None)
        if close_judges is not None:
            await close_judges()


STOP_POLL_S = 0.05
"""How often the loop looks at the stop request: a signal handler sets it from outside the loop,
which no await wakes up for."""


class LocalExecutor(Executor):
    """Runs a plan in this process.

    A stop request (Ctrl-C, SIGTERM, fail-fast, …) stops scheduling at once; runs in flight get
    ``grace_s`` to finish, then are abandoned (not counted), and the sweep finishes with what ran.
    """

    def __init__(self, *, grace_s: float = DEFAULT_STOP_GRACE_S, adapters: BuiltAdapters | None = None) -> None:
        self.grace_s = grace_s
        self.adapters = adapters
        """The plan's agents and judges, built when it was prepared (``farm.agents.built``): its
        first sweep runs them; without them (or for a later sweep) they are built here."""

    def run(self, plan: SweepPlan, observer: SweepObserver, stop: SweepStop | None = None) -> SweepReport:
        box: list[SweepReport] = []
        # The report must not be the main task's result: at exit asyncio.Runner formats repr()
        # of that task (through signal.getsignal), i.e. of the whole report (0.45 s at 100k runs).
        asyncio.run(self._run_into(plan, observer, stop or SweepStop(), box))
        return box[0]

    async def arun(self, plan: SweepPlan, observer: SweepObserver, stop: SweepStop | None = None) -> SweepReport:
        """``run`` on the caller's event loop."""
        return await self._run(plan, observer, stop or SweepStop())

    async def _run_into(self, plan: SweepPlan, observer: SweepObserver, stop: SweepStop,
                        box: list[SweepReport]) -> None:
        box.append(await self._run(plan, observer, stop))

    async def _run(self, plan: SweepPlan, observer: SweepObserver, stop: SweepStop) -> SweepReport:
        adapters, self.adapters = self.adapters, None  # an adapter serves one sweep: closed at its end
        sweep = _Sweep(plan, observer, stop, adapters)
        started_at = utc_now()
        observer.on_start(start_event(plan, started_at))
        t0 = time.monotonic()
        levels = plan.ramp or [max(plan.parallel, 1)]
        try:
            with collector.eased():  # runs allocate short-lived objects by the hundred (farm.collector)
                for level, in_flight in enumerate(levels):  # --ramp: level after level (SPEC 25)
                    if stop.reason is None:
                        await self._drive(functools.partial(sweep.worker, sweep.runs(level)), in_flight, stop)
        finally:
            await sweep.aclose()
        sweep.flush_partial()
        report = finish_sweep(plan, sweep.finished, case_ids=plan.case_ids, started_at=started_at,
                              duration_ms=(time.monotonic() - t0) * 1000, stopped=stop.reason,
                              reason=sweep.fleet.stop_message if sweep.fleet.stopped else None,
                              budget=await sweep.fleet.budget_figures())
        if sweep.ramp is not None:
            report.summary.ramp = sweep.ramp.figures(plan.runs_per_case // len(sweep.ramp.levels))
        if sweep.details is not None:
            attach_details(report, sweep.details)
        observer.on_finish(report)
        return report

    async def _drive(self, worker: Callable[[], Coroutine[Any, Any, None]], count: int, stop: SweepStop) -> None:
        """Start ``count`` workers, then drive them until every one is done or a stop is asked for.
        An interrupted sweep gives its runs in flight ``grace_s``, then abandons them; other stops
        (fail-fast, budget) let them finish."""
        workers: list[asyncio.Task[None]] = []
        try:
            for _ in range(count):  # one at a time: see the module docstring
                if stop.event.is_set():
                    break
                workers.append(asyncio.create_task(worker()))
                await asyncio.sleep(0)  # it makes its first run up to its first wait (its request sent)
                if workers[-1].done():  # it found no run: the runs ran out, the next ones would find none
                    break
            pending: set[asyncio.Task[None]] = set(workers)
            while pending and not stop.event.is_set():
                done, pending = await asyncio.wait(pending, timeout=STOP_POLL_S, return_when=asyncio.FIRST_EXCEPTION)
                if any(not t.cancelled() and t.exception() for t in done):
                    break
            if pending and stop.event.is_set():
                grace = self.grace_s if stop.reason is StopReason.INTERRUPTED else None
                await asyncio.wait(pending, timeout=grace, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            for task in workers:
                task.cancel()  # runs still in flight are abandoned: they never reach the report
            await asyncio.gather(*workers, return_exceptions=True)
        failures = [t.exception() for t in workers if not t.cancelled()]
        failure = next((e for e in failures if e is not None), None)
        if failure is not None:
            raise failure  # a bug of ours, not a run's outcome (those are RunResults)
