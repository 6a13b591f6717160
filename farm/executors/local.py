"""The in-process executor (the default): runs a sweep on an asyncio loop in this process.

``parallel`` worker coroutines pull (case, run) pairs from one iterator, so memory stays flat
however many runs a sweep has, and a slow synchronous agent (run in its own thread by the
python adapter) never blocks the others. It calls the same ``execute_run`` and
``CaseAccumulator`` as the Celery tasks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

from farm.agents.resolve import AgentPool
from farm.checks.base import JudgeResolver
from farm.execute import execute_run
from farm.executors.base import SweepPlan, report_metadata, utc_now
from farm.models import Case, CaseStats, RunResult, SweepReport
from farm.observers import SweepObserver, SweepStart
from farm.stats import CaseAccumulator, build_report, pass_ks


def _judges(plan: SweepPlan) -> JudgeResolver | None:
    try:
        from farm.agents.judge import create_judge_resolver
    except ImportError:  # judge wiring not installed: judge checks fail with a clear message
        return None
    return create_judge_resolver(plan.options)


class _Sweep:
    """State of one in-process sweep."""

    def __init__(self, plan: SweepPlan, observer: SweepObserver) -> None:
        self.plan = plan
        self.observer = observer
        self.pool = AgentPool(plan.options)
        pass_k = pass_ks(plan.metadata)
        self.accumulators = {
            c.id: CaseAccumulator(c, plan.case_plans[c.id], max_details=plan.max_run_details, pass_k=pass_k)
            for c in plan.cases
        }
        self.finished: list[CaseStats] = []
        self.stopped = False
        for ref in dict.fromkeys(plan.agents.values()):
            self.pool.get(ref)  # fail on a bad agent before anything runs
        self.judges = _judges(plan)

    def runs(self) -> Iterator[tuple[Case, int]]:
        for case in self.plan.cases:
            for run in range(1, self.plan.case_plans[case.id].runs + 1):
                if self.stopped:
                    return
                yield case, run

    async def worker(self, queue: Iterator[tuple[Case, int]]) -> None:
        for case, run in queue:
            agent = self.pool.get(self.plan.agents[case.id])
            result = await execute_run(case, run, agent, self.plan.env, judges=self.judges)
            self.record(result)
            # A run of an agent that answers without suspending never gives the loop a turn:
            # yield once per run, so workers take turns and the loop drops cancelled timers.
            await asyncio.sleep(0)

    def record(self, result: RunResult) -> None:
        acc = self.accumulators[result.case_id]
        if not acc.add(result):
            return
        self.observer.on_result(result)
        if self.plan.fail_fast and acc.cannot_pass:
            self.stopped = True
        if acc.done:
            self._finish_case(result.case_id)

    def _finish_case(self, case_id: str) -> None:
        stats = self.accumulators.pop(case_id).stats()
        self.finished.append(stats)
        self.observer.on_case(stats)

    def flush_partial(self) -> None:
        """Fail-fast: report the cases that had runs when scheduling stopped."""
        for case_id in [cid for cid, acc in self.accumulators.items() if acc.count]:
            self._finish_case(case_id)


class LocalExecutor:
    """Runs a plan in this process."""

    def run(self, plan: SweepPlan, observer: SweepObserver) -> SweepReport:
        box: list[SweepReport] = []
        # The report must not be the main task's result: at exit asyncio.Runner formats repr()
        # of that task (through signal.getsignal), i.e. of the whole report (0.45 s at 100k runs).
        asyncio.run(self._run_into(plan, observer, box))
        return box[0]

    async def _run_into(self, plan: SweepPlan, observer: SweepObserver, box: list[SweepReport]) -> None:
        box.append(await self._run(plan, observer))

    async def _run(self, plan: SweepPlan, observer: SweepObserver) -> SweepReport:
        sweep = _Sweep(plan, observer)
        started_at = utc_now()
        observer.on_start(SweepStart(plan.sweep_id, plan.agent_label, len(plan.cases), plan.total_runs, started_at))
        t0 = time.monotonic()
        queue = sweep.runs()
        try:
            await asyncio.gather(*(sweep.worker(queue) for _ in range(max(plan.parallel, 1))))
        finally:
            await sweep.pool.aclose()
            close_judges = getattr(sweep.judges, "aclose", None)
            if close_judges is not None:
                await close_judges()
        sweep.flush_partial()
        order = {c.id: i for i, c in enumerate(plan.cases)}
        stats = sorted(sweep.finished, key=lambda s: order[s.id])
        metadata = report_metadata(plan, started_at)
        if sweep.stopped:  # "stopped" as the distributed executor writes it; "not_run" lists the rest
            metadata["stopped"] = "fail-fast"
            metadata["not_run"] = list(sweep.accumulators)
        report = build_report(
            stats,
            duration_ms=round((time.monotonic() - t0) * 1000, 1),
            runs_per_case=plan.runs_per_case,
            environment=plan.env.describe(),
            metadata=metadata,
        )
        observer.on_finish(report)
        return report
