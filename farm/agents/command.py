"""Agents that are programs (``cmd:path/to/program args``), one process per turn.

The program reads the farm protocol's request JSON on stdin (``{"messages", "sly_data",
"context"}``, as HTTP agents get it) and answers on stdout: JSON read like an HTTP answer, or
anything else as text. A non-zero exit is an error carrying the end of stderr. The program runs
in its own process group, killed whole when it exits (a child it left behind holding stdout
neither makes the turn a timeout nor survives it), when the turn's time is up or the run is
cancelled. A child that left the group (``setsid``) is found by a mark in its environment and
ended then too (``farm.agents.reaper``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from farm.agents.base import AgentRequest
from farm.agents.protocol import reply_from_value, request_payload
from farm.agents.reaper import MARK_VAR, PROGRAMS, adopt_orphans, end_turn_leftovers, new_mark
from farm.agents.repo_commit import agent_served
from farm.agents.secrets import excerpt, redact, redact_reply, redact_value
from farm.errors import AgentError, AgentResolutionError, FaultKind
from farm.models import Reply

EXIT_POLL_S = 0.05
"""How often a turn whose program's pipes are still open looks whether the program has exited."""

STDERR_TAIL = 500
"""Characters of stderr kept in an error message (its end: where the traceback is)."""


def resolve_program(command: str, base_dir: Path) -> list[str]:
    """Split ``command``; find its program relative to ``base_dir``, then on PATH.

    A ``.py`` program that is not executable runs with this interpreter.

    Raises:
        AgentResolutionError: the command is empty, does not split, or the program is not found.
    """
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise AgentResolutionError(f"cmd:{command}: cannot split the command: {exc}") from None
    if not argv:
        raise AgentResolutionError("cmd: no program given (expected cmd:path/to/program)")
    program = Path(argv[0]).expanduser()
    local = program if program.is_absolute() else base_dir / program
    if local.is_file():
        found = str(local.resolve())
    elif os.sep not in argv[0] and (on_path := shutil.which(argv[0])):
        found = on_path
    else:
        raise AgentResolutionError(f"cmd:{command}: program {argv[0]!r} not found in {base_dir} nor on PATH")
    if found.endswith(".py") and not os.access(found, os.X_OK):
        return [sys.executable, found, *argv[1:]]
    if not os.access(found, os.X_OK):
        raise AgentResolutionError(f"cmd:{command}: {found} is not executable")
    return [found, *argv[1:]]


class CommandAgent:
    """Runs the program once per turn."""

    def __init__(self, agent_id: str, argv: list[str], cwd: Path) -> None:
        self.id = agent_id
        self.argv = argv
        self.cwd = cwd
        self.served = agent_served(cwd)
        """The commit of the repository it runs in (SPEC 25); None outside one."""

    async def respond(self, request: AgentRequest) -> Reply:
        payload = request_payload(request)
        stdin = json.dumps(payload, ensure_ascii=False).encode()
        mark = new_mark()
        out, err = _Capture(), _Capture()
        try:
            process = await self._start(out, err, mark)
            stdout, stderr = await self._communicate(process, stdin, request.timeout_s, (out, err), mark)
        finally:
            out.close()
            err.close()
        if process.returncode != 0:
            tail = stderr.decode(errors="replace")[-STDERR_TAIL:]
            raise AgentError(redact(f"agent {self.id}: exited with {process.returncode}: {excerpt(tail, STDERR_TAIL)}"),
                             kind=FaultKind.CRASHED)
        return redact_reply(self._reply(stdout.decode(errors="replace"), payload, stderr))

    async def _start(self, out: _Capture, err: _Capture, mark: str) -> Any:
        try:
            with PROGRAMS.start() as started:  # its zombie is asyncio's to reap, not the reaper's
                process = await asyncio.create_subprocess_exec(
                    *self.argv,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=out.write_fd,
                    stderr=err.write_fd,
                    cwd=self.cwd,
                    env={**os.environ, MARK_VAR: mark},  # what it leaves behind is found by it (farm.agents.reaper)
                    start_new_session=True,  # its own process group: kill it with its children
                )
                started.append(process.pid)
            return process
        except OSError as exc:
            raise AgentError(redact(f"agent {self.id}: cannot start {self.argv[0]}: {exc}"),
                             kind=FaultKind.CONNECT) from None
        finally:  # the program holds its own copies of the write ends now
            out.close_write_end()
            err.close_write_end()

    async def _communicate(self, process: Any, stdin: bytes, timeout_s: float | None,
                           pipes: tuple[_Capture, _Capture], mark: str) -> tuple[bytes, bytes]:
        """Feed stdin, collect the output until the program exits; end what it left then, and on
        timeout or cancellation."""
        try:
            return await asyncio.wait_for(self._exchange(process, stdin, pipes, mark), timeout_s)
        except TimeoutError:
            await end_turn(process, mark)
            raise TimeoutError(redact(f"agent {self.id}: no answer within {timeout_s:g}s (killed)")) from None
        except BaseException:  # cancelled by execute's deadline, or the sweep stopping
            await asyncio.shield(end_turn(process, mark))
            raise

    @staticmethod
    async def _exchange(process: Any, stdin: bytes, pipes: tuple[_Capture, _Capture], mark: str
                        ) -> tuple[bytes, bytes]:
        """The turn ends when the program exits, not when its pipes close: a child it left behind
        (``sleep 600 &``, or a ``setsid`` one outside its group) may hold stdout open for ever. What
        the program wrote before it exited is in the pipes then: read to the end of that, and end
        the leftovers."""
        out, err = pipes
        await out.start()
        await err.start()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it need not read its stdin
            process.stdin.write(stdin)
            await process.stdin.drain()
        process.stdin.close()
        both = asyncio.ensure_future(asyncio.gather(out.ended.wait(), err.ended.wait()))
        try:
            # Until EOF on both pipes (the usual end), or the program's exit with a pipe still held.
            # asyncio's wait() on Python < 3.12 waits for the pipes too, so poll its return code.
            while not both.done() and process.returncode is None:
                await asyncio.wait({both}, timeout=EXIT_POLL_S)
            await process.wait()  # pipes at EOF: the program has exited or is about to
            await end_turn(process, mark)
            return out.drain(), err.drain()
        finally:
            both.cancel()
            both.add_done_callback(_retrieved)  # no "exception was never retrieved" for the cancelled wait

    def _reply(self, out: str, payload: dict[str, Any], stderr: bytes) -> Reply:
        raw: dict[str, Any] = {
            "request": {"argv": [redact(a) for a in self.argv], "stdin": redact_value(payload)},
            "response": {"stdout": redact(out), "stderr": redact(stderr.decode(errors="replace")[-STDERR_TAIL:])},
        }
        try:
            value = json.loads(out)
        except ValueError:
            return Reply(text=out.rstrip("\n"), raw=raw, served=self.served)
        reply = reply_from_value(value, raw)
        return reply if reply.served is not None else reply.model_copy(update={"served": self.served})

    async def aclose(self) -> None:
        """Nothing to release: every turn's process is gone when the turn ends."""


async def kill_group(process: Any) -> None:
    """SIGKILL the process group (the program and anything it started), then reap the program.

    Also once the program has exited: the group outlives its leader while a child of it runs,
    and the kernel does not reuse the id of a group that still has members."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await process.wait()


def _retrieved(future: asyncio.Future[Any]) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        future.exception()


async def end_turn(process: Any, mark: str) -> None:
    """Kill the program's group, reap it, then end what it left behind outside the group
    (``setsid`` children, found by ``mark``) and the group's last members (``farm.agents.reaper``)."""
    await kill_group(process)
    await asyncio.to_thread(end_turn_leftovers, mark, process.pid)


class _Capture:
    """One output pipe of the program, read into memory as it comes. Its read end is ours alone,
    so once the program has exited what it wrote can be drained to the end even while a process
    it left behind still holds the write end (asyncio's pipes would wait for that to close)."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.data = bytearray()
        self.ended = asyncio.Event()
        self._transport: asyncio.ReadTransport | None = None

    def close_write_end(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.connect_read_pipe(lambda: _Collect(self), os.fdopen(self.read_fd, "rb", 0))

    def drain(self) -> bytes:
        """What was written so far: the rest still in the pipe is read now, without waiting."""
        if not self.ended.is_set():
            with contextlib.suppress(BlockingIOError, OSError):
                while chunk := os.read(self.read_fd, 1 << 16):
                    self.data += chunk
        self.close()
        return bytes(self.data)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()  # closes the read end
            self._transport = None
        elif self.read_fd >= 0 and not self.ended.is_set():
            with contextlib.suppress(OSError):
                os.close(self.read_fd)
        self.read_fd = -1
        self.ended.set()
        self.close_write_end()


class _Collect(asyncio.Protocol):
    def __init__(self, capture: _Capture) -> None:
        self.capture = capture

    def data_received(self, data: bytes) -> None:
        self.capture.data += data

    def eof_received(self) -> bool | None:
        self.capture.ended.set()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.capture.ended.set()


def create_command_agent(command: str, *, base_dir: Path, agent_id: str | None = None) -> CommandAgent:
    """An agent for a ``cmd:`` reference (``command`` without the prefix) or ``type: command``.

    Raises:
        AgentResolutionError: the program cannot be found.
    """
    argv = resolve_program(command, Path(base_dir))
    adopt_orphans()  # what its programs leave behind comes back to this process, to be ended (farm.agents.reaper)
    return CommandAgent(agent_id or f"cmd:{command}", argv, Path(base_dir))
