"""One sweep lifecycle for both executors: the start event, the run guard, the finish.

inspect_ai's ``eval_results`` idea: the in-process executor and the workers' ``farm.report``
finish a sweep with the same function, so a stopped sweep reports the same way wherever it ran:
cases in plan order, and how it ended in ``SweepReport.outcome`` (written out as
``metadata.status`` (SPEC 11), ``metadata.stopped`` with its typed reason, ``metadata.not_run``
(cases with no run at all; partly run cases keep their runs beside ``runs_planned``),
``metadata.reason``, ``metadata.budget``), totals and duration: the finisher takes them all as
arguments, no caller patches them in afterwards. The fail-fast rule is ``CasePlan.cannot_pass``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

from farm.agents.base import Agent
from farm.checks.base import JudgeResolver
from farm.defaults import FARM_VERSION
from farm.models import (
    BudgetFigures,
    Case,
    CaseStats,
    ErrorInfo,
    RunResult,
    RunStatus,
    SweepEnvelope,
    SweepReport,
    SweepStart,
)
from farm.models.base import utc_now
from farm.models.failure_class import classified
from farm.models.outcome import StopReason, SweepOutcome, SweepStatus
from farm.plan.sweep_plan import SweepPlan
from farm.run.deferred import masked, run_resolved
from farm.run.dynamic import SimulatorResolver
from farm.run.execute import RunEnvironment, execute_run
from farm.run.waiting import queued_timeout
from farm.stats import build_report

RUN_GUARD_S = 5.0
"""Grace past the case timeout before a run is cut off from outside (``execute_run`` enforces the
timeout itself; the guard catches an agent that ignores cancellation, e.g. a blocking call)."""


class SweepStop:
    """A request to stop scheduling runs, shared by whoever decides it and the executor that obeys.

    Set from a signal handler (Ctrl-C, SIGTERM), by the fail-fast rule, a budget or a quota; the
    executor reads it between runs. The first reason wins. Thread-safe (signal handlers, worker
    threads and the event loop may all touch it).
    """

    def __init__(self) -> None:
        self._reason: StopReason | None = None
        self._lock = threading.Lock()
        self.event = threading.Event()
        """Set once a stop is requested: wait on it instead of polling."""

    def request(self, reason: StopReason) -> bool:
        """Ask the sweep to stop for ``reason``; False when it was already asked to (for another)."""
        with self._lock:
            if self._reason is not None:
                return False
            self._reason = reason
        self.event.set()
        return True

    @property
    def reason(self) -> StopReason | None:
        return self._reason


def start_event(plan: SweepPlan, started_at: str) -> SweepStart:
    """The ``start`` event every observer (and the JSONL stream) gets first."""
    # runs to be made: a skipped case's placeholder is none (the progress bar's total, the stream's start)
    return SweepStart(sweep_id=plan.sweep_id, agent_id=plan.agent_label, total_cases=plan.total_cases,
                      total_runs=plan.total_runs - plan.skipped_runs, timestamp=started_at)


def report_envelope(plan: SweepPlan, started_at: str) -> SweepEnvelope:
    """The report's envelope before the sweep ends: the plan's identity and its envelope."""
    return plan.envelope.updated(
        sweep_id=plan.sweep_id, agent_id=plan.agent_label, connector=plan.env.connector, started_at=started_at,
        version=FARM_VERSION, comparison="neuro-san-compat" if plan.env.neuro_san_compat else "documented",
    )


def finish_sweep(plan: SweepPlan, stats: Mapping[str, CaseStats], *, case_ids: Sequence[str], started_at: str,
                 duration_ms: float, stopped: StopReason | str | None = None, status: SweepStatus | None = None,
                 reason: str | None = None, budget: BudgetFigures | None = None) -> SweepReport:
    """The sweep's report from the statistics of the cases that ran, in plan order, with how it
    ended (``SweepReport.outcome``): the one place that says so.

    ``status`` defaults to ``stopped`` when a stop reason is given, else ``complete``.
    """
    status = status or (SweepStatus.STOPPED if stopped else SweepStatus.COMPLETE)
    envelope = report_envelope(plan, started_at).updated(completed_at=utc_now())
    not_run = [cid for cid in case_ids if cid not in stats]
    outcome = SweepOutcome(status=status, stopped=StopReason(stopped) if stopped else None,
                           not_run=not_run if stopped or not_run else None, reason=reason or None, budget=budget)
    report = build_report(
        [stats[cid] for cid in case_ids if cid in stats],
        duration_ms=round(duration_ms, 1), runs_per_case=plan.runs_per_case,
        environment=plan.env.describe(), metadata=dict(plan.metadata), envelope=envelope, outcome=outcome,
    )
    if plan.matrix is None:
        return report
    from farm.matrix.report import with_matrix  # the comparison's tests (scipy) only for a matrix

    return with_matrix(report, plan.matrix)


def _cut_off(case: Case, run: int, env: RunEnvironment, limit: float, started: float) -> RunResult:
    return classified(RunResult(  # classed as execute_run classes its own
        case_id=case.id, run=run, status=RunStatus.TIMEOUT, sweep_id=env.sweep_id, started_at=utc_now(),
        duration_ms=round((time.monotonic() - started) * 1000, 3),
        error=ErrorInfo(type="Timeout", message=f"run cut off after {limit:g}s (the case timeout)"),
    ))


async def run_guarded(case: Case, run: int, agent: Agent, env: RunEnvironment, *,
                      judges: JudgeResolver | None = None, simulators: SimulatorResolver | None = None,
                      not_after: float | None = None) -> RunResult:
    """``execute_run`` bounded from outside at the case timeout plus ``RUN_GUARD_S``; never raises.

    A case holding a suite's ``${?SECRET}`` reads it here, where the run runs, and every result is
    masked here, in the process that ran it (``farm.run.deferred``). A matrix arm's run names its arm."""
    if case.env_refs:
        result = await run_resolved(case, run, env.sweep_id, lambda resolved: _guarded(
            resolved, run, agent, env, judges=judges, simulators=simulators, not_after=not_after))
    else:
        result = masked(await _guarded(case, run, agent, env, judges=judges, simulators=simulators,
                                       not_after=not_after))
    return result if case.arm is None else result.model_copy(update={"arm": case.arm})


async def _guarded(case: Case, run: int, agent: Agent, env: RunEnvironment, *, judges: JudgeResolver | None,
                   simulators: SimulatorResolver | None, not_after: float | None) -> RunResult:
    limit = env.case_timeout(case)
    started = time.monotonic()
    try:
        async with queued_timeout(limit + RUN_GUARD_S):  # pushed back by the run's waits for a slot
            return await execute_run(case, run, agent, env, judges=judges, simulators=simulators,
                                     not_after=not_after)
    except TimeoutError:
        return _cut_off(case, run, env, limit, started)


__all__ = [
    "RUN_GUARD_S",
    "StopReason",
    "SweepStatus",
    "SweepStop",
    "finish_sweep",
    "report_envelope",
    "run_guarded",
    "start_event",
]
