"""The executor seam: a plan in, a report out, events to an observer on the way.

httpx's transport idea: the local executor runs the plan in this process, the Celery executor
ships it to workers; ``farm.api`` picks one and never branches on which it holds (each
subclasses ``Executor``, so ``arun`` has a default). Both finish
the sweep through ``farm.sweep.lifecycle``. The Celery one is also a ``Submitter``: ``farm test``
carries the project's bundle to its workers, asks it whether its broker answers, and with
``--detach`` submits the plan and returns.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from farm.models import SweepReport
from farm.plan.sweep_plan import SweepPlan
from farm.settings import DEFAULT_QUEUE
from farm.sweep.lifecycle import SweepStop
from farm.sweep.observers import SweepObserver

if TYPE_CHECKING:
    from farm.bundles.pack import Bundle


class Executor(Protocol):
    """Runs a plan to its report (raises FarmRuntimeError when the farm itself fails).

    ``stop`` lets the caller (a signal handler, a budget) stop the sweep early: the executor stops
    scheduling runs and still returns a report of what ran, marked with the stop reason.
    """

    def run(self, plan: SweepPlan, observer: SweepObserver, stop: SweepStop | None = None) -> SweepReport: ...

    async def arun(self, plan: SweepPlan, observer: SweepObserver, stop: SweepStop | None = None) -> SweepReport:
        """``run`` for a caller inside an event loop. By default in a thread (a distributed sweep's
        Redis reads block); the local executor overrides it to run on the caller's loop."""
        return await asyncio.to_thread(self.run, plan, observer, stop)


@runtime_checkable
class Submitter(Executor, Protocol):
    """An executor whose workers run the sweep elsewhere (``farm.distributed.submit.CeleryExecutor``)."""

    def carry(self, bundle: Bundle) -> None:
        """Store the project's bundle where the sweep will be stored, before its plan (SPEC 24)."""

    def reach(self) -> None:
        """Raise ``BrokerError`` unless the store and the broker answer (before anything is announced)."""

    def submit(self, plan: SweepPlan) -> str:
        """Store and publish the whole sweep, then return its id (``--detach``)."""


@dataclass(frozen=True)
class ExecutorOptions:
    """Which executor runs a sweep (``farm.api.create_executor``): in this process, or on the
    workers of ``broker`` through ``queue``; ``detach``: submit the plan and return."""

    broker: str | None = None
    queue: str = DEFAULT_QUEUE
    detach: bool = False


__all__ = ["Executor", "ExecutorOptions", "Submitter"]
