"""Child processes: one that must not outlive its parent (``PR_SET_PDEATHSIG``, Linux), and how one ended.

The worker processes under ``farm worker``'s supervisor (``farm.distributed.supervise``: SIGTERM, a warm
shutdown) and an isolated run's process (``workers.isolated``: SIGKILL) ask the kernel for a
signal when their parent dies, so a worker killed from outside (SIGKILL, the OOM killer) leaves
nothing running behind. Elsewhere it is a no-op, beyond exiting when the parent is gone already.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int, signum: int = signal.SIGKILL) -> None:
    """Send this process ``signum`` when ``parent`` dies; exit now if it already has."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(70)


def how_it_ended(returncode: int) -> str:
    """A child process's end in words: ``was killed by SIGKILL``, ``exited with 1``."""
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-returncode).name}"
        return f"was killed by signal {-returncode}"
    return f"exited with {returncode}"


__all__ = ["die_with_parent", "how_it_ended"]
