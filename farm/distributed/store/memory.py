"""Redis refusing writes for memory (``maxmemory`` with ``noeviction``): told apart, waited out.

A full Redis answers every write with ``OOM command not allowed when used memory > 'maxmemory'``
while reads and deletes still work. That is not a connection fault (retrying the command at once
changes nothing) and not a bug of ours: workers wait with a backoff until memory returns (an
operator raises ``maxmemory`` or frees keys) and carry on where they were; a submitter says so
and exits 3 (``BrokerError``), leaving the sweep to resume. README, "Sizing Redis", says how
much memory a sweep takes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis

log = logging.getLogger("farm.worker")

T = TypeVar("T")

FIRST_WAIT_S = 0.5
MAX_WAIT_S = 15.0

REFUSED = "Redis refused writes: OOM"
"""How every message about it starts (the submitter's exit-3 line, the workers' log)."""


def is_oom(exc: BaseException | None) -> bool:
    """Is ``exc``, or an exception it was raised from, Redis refusing a write for memory?"""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, redis.exceptions.OutOfMemoryError) or "OOM command not allowed" in str(exc):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def memory_full(client: Any) -> str | None:
    """A description when ``client``'s Redis is at its ``maxmemory`` with ``noeviction``; else None."""
    try:
        info = client.info("memory")
    except redis.RedisError:
        return None
    limit, used = int(info.get("maxmemory", 0) or 0), int(info.get("used_memory", 0) or 0)
    if limit <= 0 or used < limit or info.get("maxmemory_policy") != "noeviction":
        return None
    return (f"{REFUSED}: used_memory {used} bytes ≥ maxmemory {limit} (noeviction); raise maxmemory "
            "(CONFIG SET maxmemory …) or free keys, see README 'Sizing Redis'")


def until_writable(fn: Callable[[], T], what: str) -> T:
    """``fn()``, called again after a backoff while Redis refuses writes for memory; never gives up
    (nothing can be stored meanwhile, and a worker that exits would only lose its runs)."""
    wait = FIRST_WAIT_S
    while True:
        try:
            return fn()
        except Exception as exc:
            if not is_oom(exc):
                raise
            log.error("%s (%s): %s waits %gs for memory, then tries again", REFUSED, exc, what, wait)
        time.sleep(wait)
        wait = min(wait * 2, MAX_WAIT_S)


__all__ = ["REFUSED", "is_oom", "memory_full", "until_writable"]
