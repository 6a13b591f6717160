"""The following half of ``farm.distributed.submit.CeleryExecutor``: a sweep's Redis stream read to
its report (``attach``), each event handed to the observer as the local executor emits it, and
what stops a submitter hanging: a broker gone (``FARM_RECONNECT_TIMEOUT``), a queue nobody
consumes (``FARM_NO_WORKER_TIMEOUT``), a sweep with no progress, runs lost with a dead worker, a
Ctrl-C that cancels it. ``cancel`` drops what has not started.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from farm.distributed.broker.queues import consumers
from farm.distributed.delivery.config import Delivery
from farm.distributed.delivery.reconcile import reconcile_sweep
from farm.distributed.store.keys import STOP_CANCELLED, reconciler_key
from farm.distributed.store.memory import memory_full
from farm.distributed.store.sweep_store import CONNECTION_ERRORS, Event, SweepStore
from farm.errors import AGENT_BUILD_FAILED, AgentResolutionError, BrokerError, InputError, WorkerLostError
from farm.models import CaseStats, RunResult, SweepReport, SweepStart
from farm.plan.sweep_plan import SweepPlan
from farm.settings import FarmSettings, safe_url, sweep_queue
from farm.sweep.lifecycle import StopReason, SweepStop
from farm.sweep.observers import SweepObserver

log = logging.getLogger("farm.celery")

STALL_GRACE_S = 30.0
"""Added to twice the run lease before a sweep with live workers counts as stuck (and detached)."""
WORKER_CHECK_S = 5.0
"""While no event arrives, look for consumers of the queue this often."""
FOLLOW_BATCH, FOLLOW_PAUSE_S = 50, 0.05
"""After a read of fewer than FOLLOW_BATCH events the submitter waits FOLLOW_PAUSE_S before the
next: at hundreds of runs a second one XREAD carries dozens of results, not one (issue 32), and
an event is shown at most that much later."""


@dataclass
class _Watch:
    """Stall detection state while following a sweep."""

    last_progress: float = field(default_factory=time.monotonic)
    last_check: float = 0.0
    no_worker_since: float | None = None
    last_reconcile: float = field(default_factory=time.monotonic)
    stopping_since: float | None = None
    """When the submitter was interrupted (it cancelled the sweep then)."""
    closed: bool = False
    lost_told: int = 0
    """Runs lost with a dead worker that the user was told about (told again when the count changes)."""


class SweepFollower:
    """Follows sweeps to their reports; ``CeleryExecutor`` provides its settings, store, app and lease token."""

    settings: FarmSettings
    broker_url: str
    store_url: str
    app: Any
    _token: str
    _warn: Callable[[str], None]
    store: Callable[[], SweepStore]
    _delivery: Callable[[SweepPlan], Delivery]
    _stop_quietly: Callable[[str], None]

    def attach(self, sweep_id: str, observer: SweepObserver) -> SweepReport:
        """Re-read a sweep's events from the start (live or finished) and follow it to its report."""
        if not self.store().exists(sweep_id):
            raise InputError(f"no sweep {sweep_id!r} on {safe_url(self.broker_url)} (finished sweeps are kept "
                             "for FARM_RESULT_TTL, default 7 days)")
        # a stopped or abandoned sweep is closed at once with what ran; one whose publisher
        # vanished is published to the end first
        self._reconcile(sweep_id, close_stopped=True, repair=False)
        return self._follow(sweep_id, observer, failures=[])

    def cancel(self, sweep_id: str) -> bool:
        """Drop the runs of a sweep that have not started; False when it was already stopped or done."""
        store = self.store()
        if not store.exists(sweep_id):
            raise InputError(f"no sweep {sweep_id!r} on {safe_url(self.broker_url)}")
        if store.has_report(sweep_id):
            return False
        return store.stop(sweep_id, STOP_CANCELLED)

    def _follow(self, sweep_id: str, observer: SweepObserver, *, failures: list[BaseException],
                stop: SweepStop | None = None) -> SweepReport:
        store, last, watch = self.store(), "0-0", _Watch()
        sweep = store.load_sweep(sweep_id)
        if sweep is None:
            raise BrokerError(f"sweep {sweep_id} vanished from {safe_url(self.broker_url)}")
        while True:
            if failures:
                raise failures[0]
            if stop is not None and stop.event.is_set():
                self._interrupt(sweep, watch, stop)
            try:
                events = store.read_events(sweep_id, last, block_ms=1000)
            except CONNECTION_ERRORS as exc:
                self._reconnect(sweep_id, exc)
                continue
            if not events:
                self._check_stall(sweep, watch)
                continue
            watch.last_progress, watch.no_worker_since = time.monotonic(), None
            for event in events:
                last = event.id
                report = self._dispatch(store, sweep_id, event, observer)
                if report is not None:
                    return report
            if len(events) < FOLLOW_BATCH:  # a few: let more gather, so one read carries many at high rates
                time.sleep(FOLLOW_PAUSE_S)

    def _dispatch(self, store: SweepStore, sweep_id: str, event: Event, observer: SweepObserver
                  ) -> SweepReport | None:
        if event.type == "start" and event.data:
            observer.on_start(SweepStart.model_validate_json(event.data))
        elif event.type == "result" and event.data:
            result = RunResult.model_validate_json(event.data)
            if result.error is not None and result.error.type == AGENT_BUILD_FAILED:
                self._stop_quietly(sweep_id)  # every other run would fail the same way
                raise AgentResolutionError(f"sweep {sweep_id} stopped: {result.error.message}")
            observer.on_result(result)
        elif event.type == "case" and event.data:
            observer.on_case(CaseStats.model_validate_json(event.data))
        elif event.type == "stopped":
            self._warn(f"sweep {sweep_id} stopped ({event.data}): runs not started yet are dropped")
        elif event.type == "finish":
            report = store.get_report(sweep_id)
            if report is None:
                raise BrokerError(f"sweep {sweep_id} finished but its report is gone (expired?)")
            observer.on_finish(report)
            return report
        return None

    def _reconnect(self, sweep_id: str, error: BaseException) -> None:
        """Wait for the broker to come back; BrokerError after FARM_RECONNECT_TIMEOUT seconds."""
        deadline = time.monotonic() + self.settings.reconnect_timeout_s
        self._warn(f"lost the connection to {safe_url(self.broker_url)} ({error}); retrying for "
                   f"{self.settings.reconnect_timeout_s:g}s")
        while time.monotonic() < deadline:
            time.sleep(1.0)
            try:
                self.store().client.ping()
            except CONNECTION_ERRORS:
                continue
            if not self.store().exists(sweep_id):
                raise BrokerError(self._gone(sweep_id, "came back without it (restarted without persistence?)"))
            return
        raise BrokerError(f"lost the connection to {safe_url(self.broker_url)} ({error}) and it did not come back "
                          f"within {self.settings.reconnect_timeout_s:g}s; the sweep may still finish on the workers: "
                          f"farm results {sweep_id}")

    def _reconcile(self, sweep_id: str, *, close_stopped: bool = False, repair: bool = True) -> None:
        """One reconcile pass from here (``farm.distributed.delivery.reconcile``); failures only logged."""
        try:
            reconcile_sweep(self.store(), self.app, sweep_id, visibility_timeout_s=self.settings.visibility_timeout_s,
                            close_stopped=close_stopped, repair=repair)
        except CONNECTION_ERRORS:
            raise
        except Exception:
            log.debug("cannot reconcile sweep %s", sweep_id, exc_info=True)

    def _gone(self, sweep_id: str, how: str) -> str:
        """Why a sweep in flight cannot go on: its plan and results left the store."""
        return (f"sweep {sweep_id} is gone: the store at {safe_url(self.store_url)} {how}; no worker can "
                f"deliver it and `farm results` cannot re-attach: the sweep is lost; submit it again")

    def _tell_lost(self, sweep_id: str, watch: _Watch) -> None:
        """Runs a killed worker held make the bar stop short: say so, and when they come back."""
        from farm.distributed.lost_runs import lost_runs
        from farm.wording import plural

        lost = lost_runs(self.store(), sweep_id, self.settings.visibility_timeout_s)
        count = lost.count if lost else 0
        if lost is not None and count != watch.lost_told:
            back = datetime.fromtimestamp(lost.back_epoch, UTC).strftime("%H:%M:%SZ")
            self._warn(f"{plural(count, 'run')} lost with a worker that died: published again by {back}, once "
                       "the sweep has been idle a whole lease (FARM_LEASE); the progress waits for them")
        watch.lost_told = count

    def _check_stall(self, sweep: SweepPlan, watch: _Watch) -> None:
        now, no_worker = time.monotonic(), self.settings.no_worker_timeout_s
        interval = self._delivery(sweep).interval_s
        if now - watch.last_reconcile >= interval:  # the follower reconciles too, one at a time
            watch.last_reconcile = now
            store = self.store()
            if store.claim_lease(reconciler_key(sweep.sweep_id), self._token, max(1, int(interval * 1000))):
                self._reconcile(sweep.sweep_id)
        if now - watch.last_check >= WORKER_CHECK_S:
            watch.last_check = now
            full = memory_full(self.store().client)  # workers wait for memory: say so, leave it to resume
            if full is not None:
                raise BrokerError(f"{full}; sweep {sweep.sweep_id} resumes when memory returns "
                                  f"(`farm results {sweep.sweep_id}` re-attaches)")
            if not self.store().exists(sweep.sweep_id):  # never "the workers keep delivering it" then
                raise BrokerError(self._gone(sweep.sweep_id, "lost its keys (flushed, restarted without "
                                             "persistence, or expired with nothing alive to keep them)"))
            self._tell_lost(sweep.sweep_id, watch)
            if consumers(self.app, sweep.queue):
                watch.no_worker_since = None
            elif watch.no_worker_since is None:
                watch.no_worker_since = now
                own = sweep.queue == sweep_queue(sweep.sweep_id)  # --own-queue: its workers are --sweep ID
                how = f"--sweep {sweep.sweep_id}" if own else f"-Q {sweep.queue}"
                self._warn(f"no worker consumes queue {sweep.queue!r} on {safe_url(self.broker_url)}: start one "
                           f"with `farm worker --broker URL {how}`; waiting {no_worker:g}s")
        sid = sweep.sweep_id
        if watch.no_worker_since is not None and now - watch.no_worker_since >= no_worker:
            raise WorkerLostError(f"no worker consumed queue {sweep.queue!r} for {no_worker:g}s: detached, not "
                                  f"cancelled; sweep {sid} stays queued: start workers, then `farm results {sid}` "
                                  f"re-attaches (`farm cancel {sid}` drops it)")
        # a safety net, not the mechanism: the reconcilers republish after one idle lease
        limit = self.settings.stall_timeout_s or (2 * self._delivery(sweep).lease_s + STALL_GRACE_S)
        if now - watch.last_progress >= limit:
            fleet, then = (("although workers are up", "the workers keep delivering it")
                           if watch.no_worker_since is None else
                           ("and no worker consumes its queue", f"start workers on queue {sweep.queue!r}"))
            raise WorkerLostError(f"sweep {sid} made no progress for {limit:g}s {fleet}: detached, "
                                  f"not cancelled; {then}; `farm results {sid}` re-attaches, "
                                  f"`farm cancel {sid}` drops it")

    def _interrupt(self, sweep: SweepPlan, watch: _Watch, stop: SweepStop) -> None:
        """Ctrl-C or SIGTERM on the submitter cancels the sweep on the workers: runs not started
        are dropped, runs in flight get FARM_STOP_GRACE seconds, then it is closed with what ran."""
        now, sid = time.monotonic(), sweep.sweep_id
        if watch.stopping_since is None:
            watch.stopping_since = now
            self.store().stop(sid, (stop.reason or StopReason.INTERRUPTED).value)
        elif not watch.closed and now - watch.stopping_since >= self.settings.stop_grace_s:
            watch.closed = True
            self._reconcile(sid, close_stopped=True, repair=False)
