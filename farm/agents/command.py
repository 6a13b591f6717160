"""Agents that are programs (``cmd:path/to/program args``), one process per turn.

The program reads the farm protocol's request JSON on stdin (``{"messages", "sly_data",
"context"}``, as HTTP agents get it) and answers on stdout: JSON read like an HTTP answer, or
anything else as text. A non-zero exit is an error carrying the end of stderr. The program runs
in its own process group, killed whole when it exits (a child it left behind holding stdout
neither makes the turn a timeout nor survives it), when the turn's time is up or the run is
cancelled.
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

    async def respond(self, request: AgentRequest) -> Reply:
        payload = request_payload(request)
        stdin = json.dumps(payload, ensure_ascii=False).encode()
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                start_new_session=True,  # its own process group: kill it with its children
            )
        except OSError as exc:
            raise AgentError(redact(f"agent {self.id}: cannot start {self.argv[0]}: {exc}"),
                             kind=FaultKind.CONNECT) from None
        stdout, stderr = await self._communicate(process, stdin, request.timeout_s)
        if process.returncode != 0:
            tail = stderr.decode(errors="replace")[-STDERR_TAIL:]
            raise AgentError(redact(f"agent {self.id}: exited with {process.returncode}: {excerpt(tail, STDERR_TAIL)}"),
                             kind=FaultKind.CRASHED)
        return redact_reply(self._reply(stdout.decode(errors="replace"), payload, stderr))

    async def _communicate(self, process: Any, stdin: bytes, timeout_s: float | None) -> tuple[bytes, bytes]:
        """Feed stdin, collect the output until the program exits; kill the process group then,
        and on timeout or cancellation."""
        try:
            return await asyncio.wait_for(self._exchange(process, stdin), timeout_s)
        except TimeoutError:
            await kill_group(process)
            raise TimeoutError(redact(f"agent {self.id}: no answer within {timeout_s:g}s (killed)")) from None
        except BaseException:  # cancelled by execute's deadline, or the sweep stopping
            await asyncio.shield(kill_group(process))
            raise

    @staticmethod
    async def _exchange(process: Any, stdin: bytes) -> tuple[bytes, bytes]:
        """The turn ends when the program exits, not when its pipes close: a child it left behind
        (``sleep 600 &``) may hold stdout open for ever. Its group is killed then, which closes them."""
        out = asyncio.ensure_future(process.stdout.read())
        err = asyncio.ensure_future(process.stderr.read())
        try:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it need not read its stdin
                process.stdin.write(stdin)
                await process.stdin.drain()
            process.stdin.close()
            pipes = asyncio.gather(out, err)
            # Until EOF on both pipes (the usual end), or the program's exit with a pipe still held.
            # asyncio's wait() on Python < 3.12 waits for the pipes too, so poll its return code.
            while not pipes.done() and process.returncode is None:
                await asyncio.wait({pipes}, timeout=EXIT_POLL_S)
            await kill_group(process)  # what it left running goes with the turn; the pipes close
            stdout, stderr = await pipes
            return stdout, stderr
        finally:
            out.cancel()
            err.cancel()

    def _reply(self, out: str, payload: dict[str, Any], stderr: bytes) -> Reply:
        raw: dict[str, Any] = {
            "request": {"argv": [redact(a) for a in self.argv], "stdin": redact_value(payload)},
            "response": {"stdout": redact(out), "stderr": redact(stderr.decode(errors="replace")[-STDERR_TAIL:])},
        }
        try:
            value = json.loads(out)
        except ValueError:
            return Reply(text=out.rstrip("\n"), raw=raw)
        return reply_from_value(value, raw)

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


def create_command_agent(command: str, *, base_dir: Path, agent_id: str | None = None) -> CommandAgent:
    """An agent for a ``cmd:`` reference (``command`` without the prefix) or ``type: command``.

    Raises:
        AgentResolutionError: the program cannot be found.
    """
    argv = resolve_program(command, Path(base_dir))
    return CommandAgent(agent_id or f"cmd:{command}", argv, Path(base_dir))
