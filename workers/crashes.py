"""Worker deaths counted per run, so a poison run is contained and innocent runs are not blamed.

A worker process holds many runs at once, so when it dies (an agent's ``os._exit`` or segfault,
or a SIGKILL from outside) nothing says which run killed it. SPEC 11: a run in flight at a death
is delivered again; after its second such death it runs once more alone, in a process of its own
(``workers.isolated``), and only if that process dies too is it recorded ``crashed``.

Bookkeeping, in the sweep's ``starts`` hash: each run, as it starts, sets its start marker (the
holder: this process's token; and ``deaths``), and clears it once settled. A run that starts and
finds a marker of a *dead* holder (its heartbeat key expired) was in flight when that process
died: ``deaths`` + 1. A marker of a live holder is a concurrent duplicate delivery (the delivery
reconciler, a lease that ran out): nothing is counted. A marker of this very process is a retry
here (a requeue after a Redis fault): nothing either. Runs only reserved (prefetched) by a dying
worker never started, so they carry no marker and count nothing.

Heartbeats: each worker process refreshes ``farm:worker-alive:{token}`` every third of its TTL;
the TTL stays under half the visibility timeout, so a run redelivered after its worker's death
(which takes the visibility timeout) always finds the heartbeat gone.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from farm.redis_keys import PREFIX, start_field, starts_key, worker_alive_key
from farm.store import SweepStore

log = logging.getLogger("farm.worker")

ISOLATE_AFTER_DEATHS = 2
"""A run in flight at this many worker deaths runs alone in a process of its own (SPEC 11)."""

MAX_HEARTBEAT_TTL_S = 10

START_LUA = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
local deaths = 0
if raw then
  local marker = cjson.decode(raw)
  deaths = tonumber(marker['d']) or 0
  if marker['h'] ~= ARGV[2] then
    if redis.call('EXISTS', ARGV[3] .. marker['h']) == 1 then
      return {1, deaths}
    end
    deaths = deaths + 1
  end
end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode({h = ARGV[2], d = deaths}))
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
return {0, deaths}
"""
"""KEYS: starts hash. ARGV: field, this holder's token, heartbeat key prefix, TTL.
Returns {duplicate, deaths}: duplicate is 1 when a live holder elsewhere has the run in flight."""


@dataclass(frozen=True)
class Start:
    """What a run learnt as it started: how many worker deaths it was in flight at."""

    deaths: int
    duplicate: bool

    @property
    def isolate(self) -> bool:
        return self.deaths >= ISOLATE_AFTER_DEATHS


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


class CrashBook:
    """Start markers of one store's runs (``SweepStore``'s client)."""

    def __init__(self, store: SweepStore, visibility_timeout_s: int) -> None:
        self.store = store
        self.ttl_s = heartbeat_ttl(visibility_timeout_s)
        self._start = store.client.register_script(START_LUA)

    def start(self, sweep_id: str, case_id: str, run: int) -> Start:
        token = _HEARTBEAT.ensure(self.store.client, self.ttl_s)
        duplicate, deaths = self._start(keys=[starts_key(sweep_id)], args=[
            start_field(case_id, run), token, f"{PREFIX}worker-alive:", self.store.ttl])
        return Start(deaths=int(deaths), duplicate=bool(int(duplicate)))



__all__ = ["ISOLATE_AFTER_DEATHS", "CrashBook", "Heartbeat", "Start", "heartbeat_ttl"]
