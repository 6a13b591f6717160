"""A suspected poison run, run alone in a process of its own (SPEC 11).

A run that was in flight at two worker deaths (``workers.crashes``) runs once more here: the
worker starts ``python -m workers.isolated``, which runs it through the same path as any run
(``workers.attempt.attempt_run``: the run guard, fleet control, checks) and writes the result to a file
the worker reads. The worker stores it as usual. When that process dies without a result
(``os._exit``, a segfault, the OOM killer), the run is recorded as an error run with
``error.kind`` ``crashed``; the worker itself is unharmed.

The child dies with its worker (``PR_SET_PDEATHSIG``), so a worker killed from outside leaves no
orphan behind; the run then comes back like any run in flight at a death.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from farm.agents.reaper import contained
from farm.distributed.orphans import die_with_parent, how_it_ended
from farm.models import ErrorInfo, RunResult, RunStatus
from farm.models.base import utc_now
from farm.models.failure_class import classified
from farm.plan.sweep_plan import PlannedCase, SweepPlan
from farm.sweep.lifecycle import RUN_GUARD_S

START_ALLOWANCE_S = 60.0
"""Time for the child to start (imports, Redis) on top of the run's own limit."""


def _death(returncode: int) -> str:
    ended = how_it_ended(returncode)
    return ended if returncode < 0 else f"{ended} before it had a result"


def crashed_run(sweep_id: str, case_id: str, run: int, detail: str) -> RunResult:
    """The error run of a run that killed the process it ran alone in."""
    return classified(RunResult(case_id=case_id, run=run, status=RunStatus.ERROR, sweep_id=sweep_id,
                                started_at=utc_now(), error=ErrorInfo(type="Crashed", kind="crashed", message=detail)))


def run_isolated(store_url: str, ttl: int, sweep: SweepPlan, planned: PlannedCase, run: int) -> RunResult | None:
    """Run (case, run) in a child process; its result, None when fleet control refused a call,
    or a ``crashed`` error run when the child died."""
    limit = sweep.env.case_timeout(planned.case) + RUN_GUARD_S + START_ALLOWANCE_S
    with tempfile.TemporaryDirectory(prefix="farm-isolated-") as tmp:
        out = Path(tmp) / "result.json"
        argv = [sys.executable, "-m", "workers.isolated", store_url, str(ttl), sweep.sweep_id, planned.id,
                str(run), str(out), str(os.getpid())]
        started = time.monotonic()
        child = subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL)
        try:
            returncode = child.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)  # the run's own children go with it
            child.wait()
        text = out.read_text(encoding="utf-8") if out.exists() else ""
    if returncode == 0 and text:
        value = json.loads(text)
        return None if value is None else RunResult.model_validate(value)
    if returncode is None:
        return classified(RunResult(
            case_id=planned.id, run=run, status=RunStatus.TIMEOUT, sweep_id=sweep.sweep_id, started_at=utc_now(),
            duration_ms=round((time.monotonic() - started) * 1000, 3),
            error=ErrorInfo(type="Timeout", message=f"isolated run killed after {limit:g}s")))
    detail = (f"the run killed its worker process twice, then the process it ran alone in "
              f"({_death(returncode)})")
    return crashed_run(sweep.sweep_id, planned.id, run, detail)


def main(argv: list[str]) -> int:
    store_url, ttl, sweep_id, case_id, run, out, parent = argv
    die_with_parent(int(parent))
    from workers.attempt import attempt_run
    from workers.context import CACHE, get_store

    store = get_store(store_url, int(ttl))
    sweep = CACHE.sweep(store, sweep_id)
    planned = CACHE.case(store, sweep_id, case_id) if sweep is not None else None
    if sweep is None or planned is None:
        return 3
    with contained():  # the run's leftovers, setsid ones included, end with this process (farm.agents.reaper)
        result = attempt_run(sweep, planned, int(run), CACHE.fleet(store, sweep))
    Path(out).write_text("null" if result is None else result.model_dump_json(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


__all__ = ["crashed_run", "run_isolated"]
