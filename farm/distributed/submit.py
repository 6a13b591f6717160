"""The Celery executor: ships a sweep to workers as plain ``farm.run`` messages and streams it back.

``submit`` stores the plan in Redis once and publishes one ``farm.run`` per run, in batches on
one producer connection and in windows behind a publish cursor (``farm.distributed.delivery.publish``), with
no result tracking at all: no chord, no ``GroupResult`` or
``AsyncResult`` (those subscribed the submitter to one pub/sub channel per run: benchmarks/
README.md, §5). Workers fire each case's ``farm.aggregate`` through the farm's Redis barrier
(``workers.tasks``). ``attach`` follows the sweep's Redis stream and feeds the observer the same
events the local executor emits. ``run`` does both, publishing from a thread while results
already stream back.

It never hangs: an unreachable broker is a ``BrokerError``; a broker that goes away mid-sweep
gets ``FARM_RECONNECT_TIMEOUT`` seconds to come back; a queue nobody consumes detaches after
``FARM_NO_WORKER_TIMEOUT`` seconds, and a sweep with workers but no progress after twice the
run lease (``WorkerLostError``): detached, not cancelled, since delivery is the farm's
(``farm.distributed.delivery``: the plan and a publish cursor are stored before the first message, the
workers reconcile). Only Ctrl-C/SIGTERM or a failure of the submitter cancels the sweep.
Celery is imported only behind a broker (here, ``farm.distributed.broker.celery_config``, ``farm worker`` and
``workers/``), never by an in-process sweep (``tests/project/test_purity.py``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from farm.bundles.pack import Bundle
from farm.distributed.broker.queues import consumers
from farm.distributed.bundles import store_bundle
from farm.distributed.delivery.config import DEFAULT_PUBLISH_BATCH, Delivery
from farm.distributed.delivery.publish import new_token, publish_from_cursor, run_slots, send_runs
from farm.distributed.delivery.reconcile import reconcile_sweep
from farm.distributed.store.keys import STOP_CANCELLED, reconciler_key
from farm.distributed.store.memory import memory_full
from farm.distributed.store.sweep_store import CONNECTION_ERRORS, Event, SweepStore, now_epoch
from farm.errors import (
    AGENT_BUILD_FAILED,
    AgentResolutionError,
    BrokerError,
    InputError,
    WorkerLostError,
)
from farm.models import CaseStats, RunResult, SweepReport, SweepStart
from farm.models.base import utc_now
from farm.plan.compact_cases import CompactCases
from farm.plan.sweep_plan import SweepPlan
from farm.run.execute import RunEnvironment
from farm.settings import FarmSettings, safe_url, sweep_queue
from farm.sweep.executor import Submitter
from farm.sweep.lifecycle import StopReason, SweepStop
from farm.sweep.observers import SweepObserver

log = logging.getLogger("farm.celery")

STALL_GRACE_S = 30.0
"""Added to twice the run lease before a sweep with live workers counts as stuck (and detached)."""
WORKER_CHECK_S = 5.0
"""While no event arrives, look for consumers of the queue this often."""


def create_celery_app(settings: FarmSettings) -> Any:
    """A private Celery app with the workers' settings, for publishing and inspecting."""
    from celery import Celery

    from farm.distributed.broker.celery_config import celery_settings

    app = Celery("farm", set_as_current=False)
    app.conf.update(celery_settings(settings))
    return app


def stored_cases(env: RunEnvironment) -> CompactCases:
    """How a submitter's plan holds its cases: in their stored form, as the store keeps them
    (``CompactCases``): a million-case plan is never a million models in the submitter."""
    return CompactCases(env)


def publish(app: Any, plan: SweepPlan, queue: str, *, batch: int = DEFAULT_PUBLISH_BATCH) -> None:
    """Every ``farm.run`` of the plan on ``queue``, without a cursor (``farm.distributed.delivery.publish``)."""
    runs = run_slots(plan.slots(), matrix=plan.matrix)
    send_runs(app, plan.model_copy(update={"queue": queue}), runs, queue, batch=batch)


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


class CeleryExecutor(Submitter):
    """Runs sweeps on Celery workers through a Redis or RabbitMQ broker, the sweep data in Redis."""

    def __init__(self, settings: FarmSettings, *, detach: bool = False,
                 warn: Callable[[str], None] | None = None) -> None:
        self.store_url = settings.store_url  # a RabbitMQ broker without FARM_STORE_URL: SettingsError (exit 2)
        self.settings = settings
        self.broker_url = settings.broker_url
        self.detach = detach
        self._warn = warn or (lambda message: log.warning("%s", message))
        self._app: Any = None
        self._store: SweepStore | None = None
        self._tokens: dict[str, str] = {}
        """Publisher lease token of each sweep this executor publishes."""
        self._token = new_token()
        """This process's reconciler lease token."""

    # ------------------------------------------------------------------ connections

    @property
    def app(self) -> Any:
        if self._app is None:
            self._app = create_celery_app(self.settings)
        return self._app

    def store(self) -> SweepStore:
        if self._store is None:
            self._store = SweepStore.from_url(self.store_url, ttl=self.settings.result_ttl_s)
            self._store.ping()
            self._store.require_version()
        return self._store

    def reach(self) -> None:
        """Raise BrokerError unless the store and the broker answer: checked before a sweep id and
        a journal are announced for a sweep that could never start."""
        self.store()
        if self.broker_url == self.store_url:
            return
        try:  # RabbitMQ: one short attempt, not kombu's retries
            with self.app.connection_for_write() as connection:
                connection.ensure_connection(max_retries=1, timeout=10)
        except Exception as exc:
            raise BrokerError(f"cannot reach the broker at {safe_url(self.broker_url)}: {exc}") from None

    def carry(self, bundle: Bundle) -> None:
        """Store the project's bundle (``farm.distributed.bundles``) unless the store holds it already."""
        store_bundle(self.store(), bundle)

    # ------------------------------------------------------------------ submitting

    def _delivery(self, plan: SweepPlan) -> Delivery:
        return Delivery.from_env(self.settings.visibility_timeout_s, plan.max_case_timeout_s,
                                 result_ttl_s=self.settings.result_ttl_s)

    def _save(self, plan: SweepPlan) -> SweepPlan:
        plan = plan.model_copy(update={"queue": self.settings.queue, "started_at": utc_now()})
        vt = self.settings.visibility_timeout_s
        if plan.max_case_timeout_s + 60 > vt:
            self._warn(f"a case timeout of {plan.max_case_timeout_s:g}s is close to FARM_VISIBILITY_TIMEOUT={vt}: "
                       "a run still going then is delivered again (counted once); raise FARM_VISIBILITY_TIMEOUT")
        token = self._tokens[plan.sweep_id] = new_token()
        try:  # the plan and the publish cursor first: whoever finds this publisher gone goes on from there
            self.store().save_sweep(plan, now_epoch(), publisher=(token, self._delivery(plan).publisher_lease_ms))
        except CONNECTION_ERRORS as exc:
            raise BrokerError(f"cannot store sweep {plan.sweep_id} at {safe_url(self.broker_url)}: {exc}") from None
        return plan

    def _publish(self, plan: SweepPlan, *, wait: bool) -> None:
        """Publish from the start, a window at a time: ``wait`` tops the window up while we follow
        the sweep; without it the first window goes out and the workers top it up."""
        delivery = self._delivery(plan)
        try:
            publish_from_cursor(self.app, self.store(), plan, plan.slots(), token=self._tokens[plan.sweep_id],
                                lease_ms=delivery.publisher_lease_ms, batch=delivery.batch, window=delivery.window,
                                wait=wait, start=0)
        except Exception as exc:
            raise BrokerError(f"cannot publish sweep {plan.sweep_id} to {safe_url(self.broker_url)}: {exc}") from exc

    def submit(self, plan: SweepPlan) -> str:
        """Store and publish the whole sweep, then return its id (``--detach``)."""
        self._publish(self._save(plan), wait=False)
        return plan.sweep_id

    def run(self, plan: SweepPlan, observer: SweepObserver, stop: SweepStop | None = None) -> SweepReport:
        """Submit and follow the sweep to its report, publishing in the background.

        The no-worker and no-progress timeouts detach (``WorkerLostError``): the sweep stays
        queued and the workers' reconcilers keep delivering it. Anything else that ends the
        submitter (Ctrl-C, SIGTERM, a failure) cancels it.
        """
        plan = self._save(plan)
        failures: list[BaseException] = []

        def publish_all() -> None:
            try:
                self._publish(plan, wait=True)
            except BaseException as exc:
                failures.append(exc)

        publisher = threading.Thread(target=publish_all, name="farm-publish", daemon=True)
        publisher.start()
        try:
            return self._follow(plan.sweep_id, observer, failures=failures, stop=stop)
        except WorkerLostError:
            raise  # detached, not cancelled: the sweep goes on without us
        except BaseException:
            self._stop_quietly(plan.sweep_id)  # interrupted or failed: let workers drain the rest
            raise

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

    def _stop_quietly(self, sweep_id: str) -> None:
        try:
            self.store().stop(sweep_id, STOP_CANCELLED)
        except Exception:
            log.debug("could not mark sweep %s stopped", sweep_id, exc_info=True)

    # ------------------------------------------------------------------ following

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


__all__ = ["CeleryExecutor", "create_celery_app", "publish", "stored_cases"]
