"""Worker deaths counted per run, so a poison run is contained and innocent runs are not blamed.

A worker process holds many runs at once, so when it dies (an agent's ``os._exit`` or segfault,
or a SIGKILL from outside) nothing says which run killed it. SPEC 11: a run in flight at a death
is delivered again; after its second such death it runs once more alone, in a process of its own
(``workers.isolated``), and only if that process dies too is it recorded ``crashed``.

Bookkeeping, in the sweep's ``running`` hash (``SweepStore.begin_run``, one round trip with the
run's other start checks): each run, as it starts, sets its marker (when: the reconciler's lease;
the holder: this process's token; and ``deaths``), and the step that settles it clears it. A run
that starts and finds a marker of a *dead* holder (its heartbeat key expired) was in flight when that process
died: ``deaths`` + 1. A marker of a live holder is a concurrent duplicate delivery (the delivery
reconciler, a lease that ran out): nothing is counted. A marker of this very process is a retry
here (a requeue after a Redis fault): nothing either. Runs only reserved (prefetched) by a dying
worker never started, so they carry no marker and count nothing.

Heartbeats: each worker process refreshes ``farm:worker-alive:{token}`` every third of its TTL;
the TTL stays under half the visibility timeout, so a run redelivered after its worker's death
(which takes the visibility timeout) always finds the heartbeat gone.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import uuid
from typing import Any

from farm.distributed.store.keys import worker_alive_key
from farm.distributed.store.sweep_store import SweepStore
from farm.settings import FarmSettings

log = logging.getLogger("farm.worker")

ISOLATE_AFTER_DEATHS = 2
"""A run in flight at this many worker deaths runs alone in a process of its own (SPEC 11)."""

MAX_HEARTBEAT_TTL_S = 10


def heartbeat_ttl(visibility_timeout_s: int) -> int:
    """Below half the visibility timeout (a redelivery finds a dead holder's heartbeat gone)."""
    return max(2, min(MAX_HEARTBEAT_TTL_S, visibility_timeout_s // 2))


class Heartbeat:
    """This process's token and a daemon thread keeping its heartbeat key alive."""

    def __init__(self) -> None:
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._lock = threading.Lock()
        self._started = False

    def ensure(self, client: Any, ttl_s: int) -> str:
        """Beat once now (so the first run's marker has a live holder), then in the background."""
        with self._lock:
            if not self._started:
                client.set(worker_alive_key(self.token), "1", ex=ttl_s)
                threading.Thread(target=self._beat, args=(client, ttl_s), name="farm-heartbeat",
                                 daemon=True).start()
                self._started = True
        return self.token

    def _beat(self, client: Any, ttl_s: int) -> None:
        stop = threading.Event()
        while not stop.wait(ttl_s / 3):
            try:
                client.set(worker_alive_key(self.token), "1", ex=ttl_s)
            except Exception as exc:  # Redis away or full: keep beating; never kill the worker
                log.warning("heartbeat to Redis failed: %s", exc)


_HEARTBEAT = Heartbeat()


def _reset_after_fork() -> None:  # a forked child (prefork pool) is another process: its own token
    global _HEARTBEAT
    _HEARTBEAT = Heartbeat()


os.register_at_fork(after_in_child=_reset_after_fork)


def holder(store: SweepStore) -> str:
    """This process's heartbeat token, beating in ``store``'s Redis from the first run on."""
    return _HEARTBEAT.ensure(store.client, _heartbeat_ttl())


@functools.lru_cache(maxsize=1)
def _heartbeat_ttl() -> int:
    return heartbeat_ttl(FarmSettings.from_env().visibility_timeout_s)


def holder_lapse_s() -> float:
    """How long a dead holder's heartbeat may still look alive: its TTL (the fleet's, as this
    process's), and a beat's round trip."""
    return _heartbeat_ttl() + 1.0


__all__ = ["ISOLATE_AFTER_DEATHS", "Heartbeat", "heartbeat_ttl", "holder", "holder_lapse_s"]
