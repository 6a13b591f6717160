"""``farm worker --sweep ID --exit-when-idle SECONDS``: when a worker for one sweep may stop.

A worker of a CI matrix job works for one sweep (its own queue, ``farm.settings.sweep_queue``)
and should end by itself, exit 0, once there is nothing left for it: the sweep's report is
stored (it is finished), or for SECONDS on end no run of it was queued or in flight. "In
flight" is read from the store, not from this worker: runs published and not settled (taken by
any worker, a killed one's included, until the broker or the reconciler delivers them again),
runs of the plan not published yet, and a plan still being stored. So a worker never leaves
while another's killed runs can still come back to the queue.

A sweep the store does not know (a wrong id, or expired) has nothing queued for it: idle.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from farm.distributed.broker.queues import waiting_messages
from farm.distributed.store import keys
from farm.distributed.store.sweep_store import SweepStore

log = logging.getLogger("farm.worker")

POLL_S = 1.0
"""How often the watcher looks (one pipeline on the store, one queue count on the broker)."""


@dataclass(frozen=True)
class SweepActivity:
    """What is left of a sweep for its workers."""

    finished: bool
    """Its report is stored."""
    busy: str | None
    """Why a worker must stay (runs queued, in flight or not published yet); None: nothing."""
    known: bool = True
    """False: the store holds no such sweep."""
    elsewhere: str | None = None
    """The queue the sweep was published on when it is not the one watched (no ``--own-queue``)."""


def sweep_activity(store: SweepStore, app: Any, sweep_id: str, queue: str) -> SweepActivity:
    """The sweep's state as its workers see it, from the store and the broker's queue."""
    pipe = store.client.pipeline(transaction=False)
    pipe.exists(keys.report_key(sweep_id))
    pipe.hget(keys.sweep_key(sweep_id), "total_runs")
    pipe.get(keys.published_key(sweep_id))
    pipe.get(keys.settled_count_key(sweep_id))
    pipe.hget(keys.sweep_key(sweep_id), "queue")
    report, total, published, settled, published_on = pipe.execute()
    if report:
        return SweepActivity(finished=True, busy=None)
    if total is None:
        return SweepActivity(finished=False, busy=None, known=False)
    if published_on and published_on != queue:  # nothing of it ever comes to this worker
        return SweepActivity(finished=False, busy=None, elsewhere=str(published_on))
    if published is None:
        return SweepActivity(finished=False, busy="its plan is being stored")
    waiting = waiting_messages(app, [queue]).get(queue, 0)
    if waiting:
        return SweepActivity(finished=False, busy=f"{waiting} messages queued")
    if int(settled or 0) < int(published):
        return SweepActivity(finished=False, busy=f"{int(published) - int(settled or 0)} runs in flight")
    if int(published) < int(total):
        return SweepActivity(finished=False, busy=f"{int(total) - int(published)} runs not published yet")
    # every run settled, no report yet: its cases are being closed, or their closing was lost and
    # a reconciler (this worker's among them) repairs it; leaving now could leave it with no report
    return SweepActivity(finished=False, busy="every run settled; the report is being built")


@dataclass
class IdleWatch:
    """Calls ``stop`` once the sweep is finished or has been idle ``idle_s`` seconds on end."""

    read: Callable[[], SweepActivity]
    idle_s: float
    stop: Callable[[str], None]
    finished: Callable[[], None] = lambda: None
    """Called once the sweep is finished, before ``stop`` (``farm worker`` then deletes its queue)."""
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def run(self) -> None:
        idle_since: float | None = None
        told = False
        while True:
            try:
                activity = self.read()
            except Exception:  # the store or broker away (redis's, kombu's errors): not idle, look again
                log.warning("cannot read the sweep's state; looking again", exc_info=True)
                idle_since = None
                self.sleep(POLL_S)
                continue
            if activity.finished:
                try:
                    self.finished()
                except Exception:  # best effort: the worker stops all the same
                    log.warning("could not clean up after the finished sweep", exc_info=True)
                self.stop("the sweep is finished")
                return
            if not told and (not activity.known or activity.elsewhere):
                log.warning("%s", "the store holds no such sweep (yet): nothing is queued for it" if not activity.known
                            else f"the sweep is on queue {activity.elsewhere!r}, not its own (farm test --own-queue):"
                                 f" this worker takes none of its runs (`farm worker -Q {activity.elsewhere}` does)")
                told = True
            now = self.clock()
            if activity.busy is not None:
                idle_since = None
            elif idle_since is None:
                idle_since = now
            elif now - idle_since >= self.idle_s:
                self.stop(f"nothing queued or in flight for {self.idle_s:g}s")
                return
            self.sleep(min(POLL_S, max(self.idle_s / 4, 0.1)))


def stop_this_worker(sweep_id: str) -> Callable[[str], None]:
    """Celery's warm shutdown of this process (SIGTERM), which then exits 0."""
    def stop(why: str) -> None:
        log.warning("sweep %s: %s: this worker stops", sweep_id, why)
        os.kill(os.getpid(), signal.SIGTERM)

    return stop


def watch_in_thread(watch: IdleWatch) -> threading.Thread:
    thread = threading.Thread(target=watch.run, name="farm-idle-watch", daemon=True)
    thread.start()
    return thread


__all__ = ["IdleWatch", "SweepActivity", "stop_this_worker", "sweep_activity", "watch_in_thread"]
