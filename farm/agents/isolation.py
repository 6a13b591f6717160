"""``--isolate``: a sync python agent called in a subprocess of its own, one call at a time.

In-process, a python agent shares the farm's interpreter: ``os._exit`` or a segfault in it ends
the farm with no report (the run journal keeps what completed). Isolated, each call goes to an
idle process of a pool (started with ``spawn``, which re-imports the agent from its spec), and a
process that dies mid-call fails only that call, as an ``AgentError`` of kind ``crashed``: one
process per call in flight, so a crash never takes another run's call with it. A call abandoned
(timeout, cancellation) kills its process, which a hung agent would otherwise keep busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import pickle
import signal
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import psutil

from farm.agents.callables import load_callable, to_reply
from farm.agents.reaper import adopt_orphans, end_descendants
from farm.errors import AgentError, FaultKind
from farm.models import Reply

MAX_IDLE = 64
"""Idle processes kept per agent; a call past that many in flight starts a new one."""


class AgentCodeError(Exception):
    """An exception of the agent's that could not be sent back as itself (not picklable)."""


def _serve(conn: Connection, spec: str, base_dir: str) -> None:
    """The child: resolve the agent once, then answer calls until the parent goes."""

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the farm's to handle (it stops the sweep)
    adopt_orphans()  # one call at a time: what a call leaves running is ended after it (farm.agents.reaper)
    fn = load_callable(spec, Path(base_dir))
    while True:
        try:
            args = conn.recv()
        except EOFError:
            return
        try:
            outcome: tuple[bool, Any] = (True, to_reply(fn(*args)))
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from agent code too: data
            outcome = (False, exc)
        end_descendants()
        try:
            conn.send(outcome)
        except (pickle.PicklingError, TypeError, AttributeError):
            text = "".join(traceback.format_exception(outcome[1])) if not outcome[0] else "unpicklable reply"
            conn.send((False, AgentCodeError(text[-2000:])))


class _Process:
    """One child process and its end of the pipe."""

    def __init__(self, spec: str, base_dir: Path) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, spec, str(base_dir)), daemon=True,
                                   name="farm-isolated-agent")
        self.process.start()
        child.close()

    async def call(self, args: tuple[Any, ...]) -> tuple[bool, Any]:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[tuple[bool, Any]] = loop.create_future()
        fd = self.conn.fileno()

        def readable() -> None:
            loop.remove_reader(fd)
            if answer.done():
                return
            try:
                answer.set_result(self.conn.recv())
            except (EOFError, OSError) as exc:
                answer.set_exception(exc)

        self.conn.send(args)
        loop.add_reader(fd, readable)
        try:
            return await answer
        finally:
            loop.remove_reader(fd)

    def died(self) -> str:
        self.process.join(timeout=5)
        code = self.process.exitcode
        return f"killed by signal {-code}" if code is not None and code < 0 else f"exited with {code}"

    def kill(self) -> None:
        if self.process.is_alive():
            with contextlib.suppress(psutil.Error):  # what its call started goes with it
                for child in psutil.Process(self.process.pid).children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        child.kill()
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


class IsolatedCalls:
    """A pool of processes running one agent's sync callable."""

    def __init__(self, spec: str, base_dir: Path) -> None:
        self.spec, self.base_dir = spec, base_dir
        self._idle: list[_Process] = []

    async def call(self, agent_id: str, args: tuple[Any, ...]) -> Reply:
        proc = self._idle.pop() if self._idle else _Process(self.spec, self.base_dir)
        try:
            ok, value = await proc.call(args)
        except (EOFError, OSError):
            detail = proc.died()
            proc.kill()
            raise AgentError(f"agent {agent_id}: its process died ({detail})", kind=FaultKind.CRASHED) from None
        except BaseException:  # timed out or cancelled: the process may be stuck in the call
            proc.kill()
            raise
        if len(self._idle) < MAX_IDLE:
            self._idle.append(proc)
        else:
            proc.kill()
        if not ok:
            raise value
        reply: Reply = value
        return reply

    def close(self) -> None:
        while self._idle:
            self._idle.pop().kill()


__all__ = ["AgentCodeError", "IsolatedCalls"]
