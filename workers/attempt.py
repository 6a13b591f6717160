"""One attempt of one run on this worker thread: the agent and judges of the thread, the shared run
guard (``farm.sweep.lifecycle.run_guarded``), the sweep's fleet control. Never raises.

``workers.runs`` calls it for every delivery of ``farm.run``, and ``workers.isolated`` for a run
that must run alone in a process of its own (SPEC 11).
"""

from __future__ import annotations

import functools
import socket
import time

from farm.errors import AGENT_BUILD_FAILED
from farm.fleet.control import FleetStoreError
from farm.fleet.runtime import FleetRuntime
from farm.models import ErrorInfo, RunResult, RunStatus
from farm.models.base import utc_now
from farm.models.failure_class import classified
from farm.plan.sweep_plan import PlannedCase, SweepPlan
from farm.sweep.lifecycle import run_guarded
from workers.context import CACHE, thread_state


def failed_run(case_id: str, run: int, sweep_id: str, status: RunStatus, kind: str, message: str,
               duration_ms: float = 0.0) -> RunResult:
    return classified(RunResult(case_id=case_id, run=run, status=status, sweep_id=sweep_id, started_at=utc_now(),
                                duration_ms=duration_ms, error=ErrorInfo(type=kind, message=message)))


def attempt_run(sweep: SweepPlan, planned: PlannedCase, run: int, fleet: FleetRuntime, *,
            interrupts: tuple[type[BaseException], ...] = ()) -> RunResult | None:
    """One run on this thread's loop under the shared run guard and the sweep's fleet control;
    never raises; None when fleet control refused a call (budget, quota)."""
    case, state = planned.case, thread_state()
    try:
        CACHE.bundles().check(sweep)  # its bundle is not here: no agent of it can be built
        agent = state.agent(sweep.options, planned.agent, fleet)
        judges = state.judge(sweep.options, fleet)
    except Exception as exc:  # the agent cannot be built here (missing key or module on this machine, …)
        return failed_run(case.id, run, sweep.sweep_id, RunStatus.ERROR, AGENT_BUILD_FAILED,
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
        return failed_run(case.id, run, sweep.sweep_id, RunStatus.TIMEOUT, "Timeout",
                          f"run cut off by the worker after {limit:g}s (task time limit)",
                          duration_ms=round((time.monotonic() - started) * 1000, 3))
    except Exception as exc:  # fleet control's own step failed: an error run, never an acked and lost one
        if isinstance(exc, FleetStoreError):
            return failed_run(case.id, run, sweep.sweep_id, RunStatus.ERROR, exc.failure_type, str(exc))
        return failed_run(case.id, run, sweep.sweep_id, RunStatus.ERROR, "QueueStoreError",
                          f"fleet control failed: {type(exc).__name__}: {exc}")


__all__ = ["attempt_run", "failed_run"]
