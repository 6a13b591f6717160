"""``farm worker`` keeps its worker up: the Celery worker runs in a child process, restarted when it dies.

The farm's workers use Celery's ``threads`` pool (runs wait on the network, not the CPU), so an
agent that calls ``os._exit`` or segfaults ends the whole worker process, and a Redis error Celery
deems unrecoverable ends it too. Celery's prefork pool replaces a dead child, the threads and solo
pools do not; so ``farm worker`` is a small supervisor: it starts the Celery worker as a child,
forwards SIGTERM, SIGINT, SIGQUIT and SIGHUP to it (warm and cold shutdown keep their meaning),
and starts it again, with a backoff, when it dies of anything else. The runs it held come back
(acks late) and are counted by ``workers.crashes``. The child dies with the supervisor
(``farm.orphans``), so SIGKILL on ``farm worker`` still kills the worker and its runs.

Not restarted: a clean exit (0) and a configuration or usage error (2, 64, 78), which would only
fail again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType

SUPERVISOR_ENV = "FARM_WORKER_SUPERVISOR"
"""Set in the child: the supervisor's pid (the child dies with it)."""

FINAL_EXITS = frozenset({0, 2, 64, 78})
"""Exit codes that end the supervisor too: clean shutdown, settings error, EX_USAGE, EX_CONFIG."""

FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
STABLE_S = 60.0
"""A child that ran this long restarts after the first backoff again."""

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)


def _describe(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exited with {code}"


def supervise(argv: Sequence[str], env: dict[str, str] | None = None) -> int:
    """Run ``argv`` until it ends cleanly or a forwarded signal stops it; its exit code."""
    stopping: list[int] = []
    child: subprocess.Popen[bytes] | None = None

    def forward(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)
        if child is not None and child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    child_env = dict(os.environ if env is None else env)
    child_env[SUPERVISOR_ENV] = str(os.getpid())
    backoff = FIRST_BACKOFF_S
    while True:
        started = time.monotonic()
        child = subprocess.Popen(list(argv), env=child_env)
        code = child.wait()
        if stopping or code in FINAL_EXITS:
            return code if code >= 0 else 128 - code
        backoff = FIRST_BACKOFF_S if time.monotonic() - started > STABLE_S else backoff
        sys.stderr.write(f"farm worker: the worker process {child.pid} {_describe(code)}; "
                         f"starting a new one in {backoff:g}s\n")
        sys.stderr.flush()
        deadline = time.monotonic() + backoff
        while not stopping and time.monotonic() < deadline:
            time.sleep(0.1)
        if stopping:
            return 128 + stopping[0]
        backoff = min(backoff * 2, MAX_BACKOFF_S)


__all__ = ["FINAL_EXITS", "SUPERVISOR_ENV", "supervise"]
