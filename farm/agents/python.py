"""The ``python`` adapter: an agent that is a Python callable, sync or async.

Called as ``fn(messages, context)`` (or ``fn(messages)`` when it takes one parameter). A str
return is the reply's text, another JSON value its structure, None neither, a ``Reply`` is
taken as is. Sync callables run in a pooled daemon thread so that a slow one does not block
other runs, and a hung one cannot keep the process alive after its run timed out; with
``--isolate`` they run in a pool of subprocesses instead (``farm.agents.isolation``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from farm.agents.base import AgentRequest
from farm.agents.callables import load_callable, to_reply
from farm.agents.repo_commit import agent_served
from farm.models import Reply

if TYPE_CHECKING:
    from farm.agents.isolation import IsolatedCalls


def _wants_context(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


MAX_POOLED_THREADS = 64
"""Daemon threads kept for sync agents; past this many busy ones, a call gets a one-off thread."""


class _Call:
    """One blocking call handed to a daemon thread, and how it ended."""

    __slots__ = ("abandoned", "args", "finished", "fn", "future", "loop", "pooled")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], loop: asyncio.AbstractEventLoop,
                 future: asyncio.Future[Any]) -> None:
        self.fn, self.args, self.loop, self.future = fn, args, loop, future
        self.pooled = self.abandoned = self.finished = False

    def run(self) -> None:
        try:
            outcome = (True, self.fn(*self.args))
        except BaseException as exc:
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            self.loop.call_soon_threadsafe(self._deliver, *outcome)

    def _deliver(self, ok: bool, value: Any) -> None:
        if self.future.done():
            return
        if ok:
            self.future.set_result(value)
        else:
            self.future.set_exception(value)


class _DaemonThreads:
    """Reusable daemon threads (a new thread per call costs ~140 µs).

    Idle threads wait on one queue; the pool grows on demand up to ``cap``. A call abandoned on
    timeout takes its thread out of the pool (it exits when the call returns, if ever) so a
    replacement can grow; past ``cap`` busy threads a call runs in a one-off daemon thread, so a
    hung agent never blocks other runs, and no thread ever keeps the process alive.
    """

    def __init__(self, cap: int = MAX_POOLED_THREADS) -> None:
        self.cap = cap
        self._jobs: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._live = 0

    def submit(self, call: _Call) -> None:
        call.pooled = True
        if self._idle.acquire(blocking=False):  # as ThreadPoolExecutor: a waiting thread takes it
            self._jobs.put(call)
            return
        with self._lock:
            grow = self._live < self.cap
            self._live += grow
        if grow:
            self._jobs.put(call)
            threading.Thread(target=self._serve, name="farm-agent", daemon=True).start()
        else:
            call.pooled = False
            threading.Thread(target=call.run, name="farm-agent-extra", daemon=True).start()

    def abandon(self, call: _Call) -> None:
        """The caller stopped waiting (timeout): the thread running ``call`` leaves the pool."""
        with self._lock:
            if call.pooled and not call.finished and not call.abandoned:
                call.abandoned = True
                self._live -= 1

    def _serve(self) -> None:
        while True:
            call = self._jobs.get()
            call.run()
            with self._lock:
                if call.abandoned:
                    return  # already counted out of the pool; a replacement may exist
                call.finished = True
            self._idle.release()


_THREADS = _DaemonThreads()


def _reset_after_fork() -> None:
    # A forked child (a prefork worker) has none of the parent's threads, only their counts.
    global _THREADS
    _THREADS = _DaemonThreads(_THREADS.cap)


os.register_at_fork(after_in_child=_reset_after_fork)


async def run_in_daemon_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a blocking call in a pooled daemon thread; abandoning it on timeout never blocks exit."""
    loop = asyncio.get_running_loop()
    call = _Call(fn, args, loop, loop.create_future())
    _THREADS.submit(call)
    try:
        return await call.future
    finally:
        if not call.future.done() or call.future.cancelled():
            _THREADS.abandon(call)


class PythonAgent:
    """An agent that is a Python callable."""

    def __init__(self, fn: Callable[..., Any], agent_id: str, *, isolated: IsolatedCalls | None = None) -> None:
        self.id = agent_id
        self._fn = fn
        self._with_context = _wants_context(fn)
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)
        self._isolated = None if self._is_async else isolated
        self.served = agent_served(_source_of(fn))
        """The commit of the repository holding the callable's file (SPEC 25); None outside one."""

    async def respond(self, request: AgentRequest) -> Reply:
        reply = await self._respond(request)
        if self.served is not None and isinstance(reply, Reply) and reply.served is None:
            reply = reply.model_copy(update={"served": self.served})
        return reply

    async def _respond(self, request: AgentRequest) -> Reply:
        args: tuple[Any, ...] = (request.messages, request.context) if self._with_context else (request.messages,)
        if self._is_async:
            value = await self._fn(*args)
        elif self._isolated is not None:
            return await self._isolated.call(self.id, args)
        else:
            value = await run_in_daemon_thread(self._fn, *args)
            if inspect.isawaitable(value):
                value = await value
        return to_reply(value)

    async def aclose(self) -> None:
        if self._isolated is not None:
            self._isolated.close()


def _source_of(fn: Callable[..., Any]) -> Path:
    """The file defining ``fn`` (or its class), else the working directory."""
    for thing in (fn, type(fn)):
        with contextlib.suppress(TypeError, OSError):
            if (source := inspect.getsourcefile(thing)) is not None:
                return Path(source)
    return Path.cwd()


def create_python_agent(spec: str, *, base_dir: Path, agent_id: str | None = None,
                        isolate: bool = False) -> PythonAgent:
    fn = load_callable(spec, base_dir)
    if not isolate:
        return PythonAgent(fn, agent_id or f"py:{spec}")
    from farm.agents.isolation import IsolatedCalls  # multiprocessing and psutil: --isolate only

    isolated = IsolatedCalls(spec, base_dir)
    return PythonAgent(fn, agent_id or f"py:{spec}", isolated=isolated)
