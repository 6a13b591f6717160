"""The executor seam: every executor has ``arun``, so ``arun_sweep`` never asks which one it holds."""

from __future__ import annotations

import asyncio
import threading

from farm.distributed.submit import CeleryExecutor
from farm.models import SweepReport
from farm.sweep.executor import Executor
from farm.sweep.local import LocalExecutor
from farm.sweep.observers import Observers


class ThreadNamed(Executor):
    """An executor that only knows ``run``; it answers with the thread it ran in."""

    def run(self, plan, observer, stop=None):  # type: ignore[no-untyped-def]
        return SweepReport.model_construct(metadata={"thread": threading.current_thread().name})


def test_an_executor_with_only_run_gets_arun_off_the_event_loop() -> None:
    async def main() -> tuple[str, str]:
        report = await ThreadNamed().arun(None, Observers())  # type: ignore[arg-type]
        return report.metadata["thread"], threading.current_thread().name

    ran_in, loop_thread = asyncio.run(main())
    assert ran_in != loop_thread  # a blocking run does not block the caller's loop


def test_both_executors_are_executors() -> None:
    assert Executor in LocalExecutor.__mro__ and Executor in CeleryExecutor.__mro__
    assert LocalExecutor.arun is not Executor.arun  # the local one runs on the caller's loop
    assert CeleryExecutor.arun is Executor.arun
