"""Waiting for capacity is not running (SPEC 15): each run's clock of the time its calls queued.

A call waits for its slot in fleet control (a budget reservation, a rate or concurrency limit);
that time is the farm's, not the agent's. ``RunClock`` (one per run, in a context variable that
the run's tasks inherit) adds it up as ``queued_s`` and pushes back by it every timeout the run
registered (the run guard's, the turn's, the checks'), so a run that waited 8 s for a slot still
has its whole ``--timeout`` for the agent; deadlines computed from a start (``execute``'s whole-run
deadline, neuro-san's whole-test budget) add ``queued_s`` through ``RunClock.left``. The run's
``duration_ms`` leaves it out and ``queued_ms`` reports it.

It also counts the run's calls that got their slot (``calls``): a run refused or starved before its
first call did not run; after one, it is an error run with its paid calls kept. Pure: no I/O.

It is the run's (``execute`` registers its timeouts here), not fleet control's: fleet control
(``farm.fleet``), which builds on the plan and so on the run, pauses it while a call queues.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Protocol


class QueueWaitError(Exception):
    """A call got no slot within ``--max-queue-wait``: before the run's first call the run did not
    run; after one, it is an error run of class ``harness:queue_wait``."""


class WaitListener(Protocol):
    """Told when a run starts and stops waiting (a neuro-san case's whole-test budget stops too)."""

    def paused(self) -> None: ...

    def resumed(self) -> None: ...


class RunClock:
    """Queueing time and granted calls of one run (one event loop: no lock needed)."""

    def __init__(self, listener: WaitListener | None = None) -> None:
        self.listener = listener
        self.queued_s = 0.0
        self.calls = 0
        self.starved = False
        """A call of the run got no slot within ``--max-queue-wait``."""
        self._timeouts: list[asyncio.Timeout] = []
        self._waits = 0
        self._paused_at = 0.0
        self._paused: list[tuple[asyncio.Timeout, float | None]] = []

    def pause(self) -> None:
        """A call of the run starts waiting for its slot: its timeouts stop (the outermost wait)."""
        self._waits += 1
        if self._waits == 1:
            self._paused_at = time.monotonic()
            if self.listener is not None:
                self.listener.paused()
            self._paused = [(timeout, timeout.when()) for timeout in self._timeouts if not timeout.expired()]
            for timeout, when in self._paused:
                if when is not None:
                    timeout.reschedule(None)

    def resume(self) -> None:
        """The wait is over: the timeouts go on from where they stopped, the wait added to ``queued_s``."""
        self._waits -= 1
        if self._waits:
            return
        waited = time.monotonic() - self._paused_at
        self.queued_s += waited
        if self.listener is not None:
            self.listener.resumed()
        for timeout, when in self._paused:
            if when is not None and timeout in self._timeouts:
                timeout.reschedule(when + waited)
        self._paused = []

    def granted(self) -> None:
        self.calls += 1

    def left(self, deadline: float) -> float:
        """Seconds left before a monotonic ``deadline`` set before the run queued."""
        return deadline + self.queued_s - time.monotonic()


_CLOCK: ContextVar[RunClock | None] = ContextVar("farm_run_clock", default=None)


def run_clock() -> RunClock | None:
    """The current run's clock; None outside a run (a judge asked by ``farm assess``, a test)."""
    return _CLOCK.get()


class new_run_clock:  # lower case: a context manager used as a function, ``with new_run_clock() as clock``
    """A clock for the run made inside the block (``listener``: told of its waits).

    A class rather than a generator context manager, as ``queued_timeout``: one of each per run."""

    __slots__ = ("_clock", "_token")

    def __init__(self, listener: WaitListener | None = None) -> None:
        self._clock = RunClock(listener)
        self._token: Token[RunClock | None] | None = None

    def __enter__(self) -> RunClock:
        self._token = _CLOCK.set(self._clock)
        return self._clock

    def __exit__(self, *_exc: object) -> None:
        assert self._token is not None
        _CLOCK.reset(self._token)


class queued_timeout:  # lower case: used as ``async with queued_timeout(seconds) as timeout``
    """``asyncio.timeout(seconds)``, pushed back by the run's waits for capacity inside it.

    A class rather than an ``asynccontextmanager``: every run enters two (its guard, its turn),
    and the generator's machinery cost more than the timeout itself."""

    __slots__ = ("_clock", "_timeout")

    def __init__(self, seconds: float) -> None:
        self._timeout = asyncio.timeout(seconds)
        self._clock: RunClock | None = None

    async def __aenter__(self) -> asyncio.Timeout:
        timeout = await self._timeout.__aenter__()
        clock = self._clock = _CLOCK.get()
        if clock is not None:
            clock._timeouts.append(timeout)  # as ``RunClock.counting`` does, without its generator
        return timeout

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._clock is not None:
            self._clock._timeouts.remove(self._timeout)
        await self._timeout.__aexit__(kind, exc, tb)  # raises TimeoutError when it expired; never suppresses


@contextlib.asynccontextmanager
async def waiting() -> AsyncIterator[None]:
    """Time the block as the current run's wait for a slot (a call queueing in fleet control); the
    run's timeouts stop meanwhile."""
    clock = _CLOCK.get()
    if clock is None:
        yield
        return
    clock.pause()
    try:
        yield
    except QueueWaitError:
        clock.starved = True
        raise
    finally:
        clock.resume()


def granted() -> None:
    """A call of the current run got its slot (it is about to be made: paid)."""
    clock = _CLOCK.get()
    if clock is not None:
        clock.granted()


def left(deadline: float) -> float:
    """Seconds before ``deadline`` (monotonic), the current run's queueing added."""
    clock = _CLOCK.get()
    return clock.left(deadline) if clock is not None else deadline - time.monotonic()


__all__ = ["QueueWaitError", "RunClock", "WaitListener", "granted", "left", "new_run_clock", "queued_timeout",
           "run_clock", "waiting"]
