"""A prepared sweep handed to its executor: ``run_sweep`` (and ``arun_sweep`` inside an event loop)
prepare, pick the executor (``create_executor``: in-process unless a broker is given) and run."""

from __future__ import annotations

import asyncio
import contextlib

from farm.agents.built import BuiltAdapters
from farm.api.prepare import prepare_sweep
from farm.api.settings import TestSettings
from farm.errors import FarmRuntimeError
from farm.models import SweepReport
from farm.settings import FarmSettings
from farm.sweep.executor import Executor, ExecutorOptions
from farm.sweep.lifecycle import SweepStop
from farm.sweep.local import LocalExecutor
from farm.sweep.observers import Observers, SweepObserver


def create_executor(options: ExecutorOptions, farm_settings: FarmSettings | None = None,
                    adapters: BuiltAdapters | None = None) -> Executor:
    """In-process unless a broker is given; Celery is imported only for a distributed sweep.
    ``adapters``: the prepared sweep's (``PreparedSweep.adapters``), which an in-process sweep runs
    instead of building them again."""
    farm_settings = farm_settings or FarmSettings.from_env()
    if options.broker:
        from farm.distributed.submit import CeleryExecutor

        executor: Executor = CeleryExecutor(farm_settings.replace(broker_url=options.broker, queue=options.queue),
                                            detach=options.detach)
        return executor
    return LocalExecutor(grace_s=farm_settings.stop_grace_s, adapters=adapters)


def run_sweep(settings: TestSettings, observer: SweepObserver | None = None, stop: SweepStop | None = None
              ) -> SweepReport:
    """``farm test`` from Python: validate, run (in-process or distributed), return the report.

    Writes no file (``farm.write_report`` does); pass an observer (e.g.
    ``farm.sweep.observers.JsonlObserver``) to follow the runs, a ``SweepStop`` to stop it early.
    Inside a running event loop (Jupyter, pytest-asyncio, FastAPI) use ``arun_sweep``.
    """
    if _loop_running():  # before anything is built: no coroutine left un-awaited
        raise FarmRuntimeError("run_sweep() cannot run inside a running event loop (Jupyter, pytest-asyncio, "
                               "FastAPI): use `await farm.arun_sweep(settings)`")
    prepared = prepare_sweep(settings)
    executor = create_executor(prepared.specs.executor, adapters=prepared.adapters)
    return executor.run(prepared.plan, observer or Observers(), stop)


def _loop_running() -> bool:
    with contextlib.suppress(RuntimeError):
        return asyncio.get_running_loop() is not None
    return False


async def arun_sweep(settings: TestSettings, observer: SweepObserver | None = None, stop: SweepStop | None = None
                     ) -> SweepReport:
    """``run_sweep`` for callers inside an event loop: an in-process sweep runs on the caller's
    loop; a distributed one follows its workers from a thread (its Redis reads block)."""
    prepared = prepare_sweep(settings)
    executor = create_executor(prepared.specs.executor, adapters=prepared.adapters)
    return await executor.arun(prepared.plan, observer or Observers(), stop)


__all__ = ["arun_sweep", "create_executor", "run_sweep"]
