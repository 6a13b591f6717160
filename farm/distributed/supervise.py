"""One ``farm worker`` command, one worker process per core: start, supervise, forward signals.

A Celery worker process runs its runs on threads under one GIL, so a single process uses one
core's worth of CPU however many runs it has in flight. ``farm worker`` therefore starts one
child worker per core (``--processes N``), each with its own thread concurrency, and stays in
front of them as their supervisor:

- a signal it gets (SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2) goes to every child as it
  is, so SIGTERM or Ctrl-C is Celery's warm shutdown of all of them (a second Ctrl-C: cold);
  the children run in their own process group, so a terminal's Ctrl-C reaches each only once;
- a child that dies (killed, crashed) is started again, after a pause that grows while children
  keep dying young, so a broken setting does not spin; a child that exits 0 was told to stop
  (``celery control shutdown``) and is not restarted; one that exits 2 (bad input: an option
  Celery does not know) would fail alike every time: every child is stopped and so is the command,
  with that code;
- on Linux each child is sent SIGTERM when the supervisor dies (``PR_SET_PDEATHSIG``): a
  SIGKILLed supervisor leaves no orphan workers behind.

The supervisor knows nothing of Celery: it runs the argv it is given for each child.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from farm.agents.reaper import adopt_orphans, end_strays
from farm.distributed.orphans import die_with_parent, how_it_ended

__all__ = ["FORWARDED", "Supervisor", "cgroup_quota", "default_processes"]

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
"""Signals the supervisor passes on to every child."""
STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
"""Signals after which a child that exits is not restarted."""
POLL_S = 0.2
YOUNG_S = 10.0
"""A child that dies younger than this counts towards the growing restart pause."""
MAX_PAUSE_S = 30.0
BAD_INPUT = 2
"""A child's exit code for bad input (``farm.errors.ExitCode.INPUT_ERROR``): never restarted."""


def default_processes() -> int:
    """The cores this process may use: its CPU affinity (a cpuset), capped by a cgroup v2 CPU
    quota (a container's CPU limit), at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, cgroup_quota() or cores))


def cgroup_quota(path: str = "/sys/fs/cgroup/cpu.max") -> int | None:
    """``ceil(quota / period)`` of a cgroup v2 ``cpu.max`` ("max 100000": no quota → None)."""
    try:
        quota, period = Path(path).read_text(encoding="ascii").split()[:2]
        return None if quota == "max" else max(1, -(-int(quota) // int(period)))
    except (OSError, ValueError):
        return None


@dataclass
class _Child:
    index: int
    process: subprocess.Popen[bytes]
    started: float


@dataclass
class Supervisor:
    """Runs ``argv(i)`` for i in 1..processes and keeps them running until told to stop."""

    argv: Callable[[int], Sequence[str]]
    processes: int
    env: dict[str, str] | None = None
    say: Callable[[str], None] = field(default=lambda line: print(f"farm worker: {line}", file=sys.stderr,
                                                                    flush=True))
    _children: dict[int, _Child] = field(default_factory=dict)
    _pending: list[int] = field(default_factory=list)
    _stopping: bool = False
    _young_deaths: int = 0

    def run(self) -> int:
        """Start the children, supervise them; returns 0 once all have stopped after a stop signal
        or a shutdown request, else the exit code of the last child that failed to start."""
        previous = {sig: signal.signal(sig, self._on_signal) for sig in FORWARDED}
        adopt_orphans()  # a worker process killed from outside leaves its agents' children to us, to end
        try:
            for index in range(1, self.processes + 1):
                self._start(index)
            self.say(f"{self.processes} worker processes: pids "
                     f"{', '.join(str(c.process.pid) for c in self._children.values())}")
            return self._supervise()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._stop_all(signal.SIGTERM)  # only when the supervisor itself failed: children left

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._pending.append(signum)

    def _start(self, index: int) -> None:
        supervisor = os.getpid()
        process = subprocess.Popen(list(self.argv(index)), env=self.env, process_group=0,
                                   preexec_fn=lambda: die_with_parent(supervisor, signal.SIGTERM))
        self._children[index] = _Child(index, process, time.monotonic())

    def _supervise(self) -> int:
        restarts: dict[int, float] = {}  # index → when to start it again
        failed = 0
        while self._children or restarts:
            self._forward_pending()
            for index, child in list(self._children.items()):
                code = child.process.poll()
                if code is None:
                    continue
                del self._children[index]
                end_strays(keep={c.process.pid for c in self._children.values()})
                if self._stopping or code == 0:
                    continue
                if code == BAD_INPUT:  # its error is above; a restart would print it again, for ever
                    failed, self._stopping = code, True
                    self.say(f"worker process {index} stopped on bad input (above): stopping "
                             f"{len(self._children)} others")
                    for other in self._children.values():
                        with contextlib.suppress(ProcessLookupError):
                            other.process.send_signal(signal.SIGTERM)
                    continue
                pause = self._pause(child)
                self.say(f"worker process {index} (pid {child.process.pid}) {how_it_ended(code)}; "
                         f"restarting it in {pause:g}s")
                restarts[index] = time.monotonic() + pause
            for index, when in list(restarts.items()):
                if self._stopping:
                    restarts.clear()
                elif time.monotonic() >= when:
                    del restarts[index]
                    self._start(index)
                    self.say(f"worker process {index} restarted: pid {self._children[index].process.pid}")
            time.sleep(POLL_S)
        return failed

    def _forward_pending(self) -> None:
        while self._pending:
            signum = self._pending.pop(0)
            if signum in STOPPING and not self._stopping:
                self._stopping = True
                self.say(f"{signal.Signals(signum).name}: stopping {len(self._children)} worker processes")
            for child in self._children.values():
                with contextlib.suppress(ProcessLookupError):
                    child.process.send_signal(signum)

    def _pause(self, child: _Child) -> float:
        if time.monotonic() - child.started < YOUNG_S:
            self._young_deaths += 1
        else:
            self._young_deaths = 0
        return 0.0 if self._young_deaths <= 1 else min(MAX_PAUSE_S, 0.5 * 2 ** (self._young_deaths - 2))

    def _stop_all(self, signum: int) -> None:
        for child in self._children.values():
            with contextlib.suppress(ProcessLookupError):
                child.process.send_signal(signum)
        for child in self._children.values():
            child.process.wait()
