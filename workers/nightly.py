"""``farm.nightly``: beat's nightly sweep, submitted as ``farm test -i SUITE --detach``."""

from __future__ import annotations

import shlex
import subprocess
import sys

from farm.history.facts import NIGHTLY_TAG, tag_argument

DEFAULT_NIGHTLY_ARGS = "--runs 10"


def start_nightly(suite: str, broker_url: str, extra_args: str | None = None) -> str:
    """Submit ``farm test -i SUITE --detach --tag trigger=nightly``; return the sweep id.

    The tag makes the worker that runs the sweep's ``farm.report`` run the nightly loop
    (``farm.history.nightly``) when it has a ``FARM_HISTORY_URL``.
    """
    args = shlex.split(extra_args if extra_args is not None else DEFAULT_NIGHTLY_ARGS)
    cmd = [sys.executable, "-m", "farm", "test", "-i", suite, "--broker", broker_url, "--detach",
           "--tag", tag_argument(NIGHTLY_TAG), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"nightly sweep of {suite} was not submitted (exit {done.returncode}): "
                           f"{done.stderr.strip()[-2000:]}")
    return done.stdout.strip().splitlines()[-1]


__all__ = ["DEFAULT_NIGHTLY_ARGS", "start_nightly"]
