"""The Celery executor: ships a sweep to workers as plain ``farm.run`` messages and streams it back.

``submit`` stores the plan in Redis once and publishes one ``farm.run`` per run, in batches on
one producer connection and in windows behind a publish cursor (``farm.distributed.delivery.publish``), with
no result tracking at all: no chord, no ``GroupResult`` or
``AsyncResult`` (those subscribed the submitter to one pub/sub channel per run: benchmarks/
README.md, §5). Workers fire each case's ``farm.aggregate`` through the farm's Redis barrier
(``workers.tasks``). ``attach`` follows the sweep's Redis stream and feeds the observer the same
events the local executor emits (the executor's following half: ``farm.distributed.follow``).
``run`` does both, publishing from a thread while results already stream back.

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
from collections.abc import Callable
from typing import Any

from farm.bundles.pack import Bundle
from farm.distributed.bundles import store_bundle
from farm.distributed.delivery.config import DEFAULT_PUBLISH_BATCH, Delivery
from farm.distributed.delivery.publish import new_token, publish_from_cursor, run_slots, send_runs
from farm.distributed.follow import SweepFollower
from farm.distributed.store.keys import STOP_CANCELLED
from farm.distributed.store.sweep_store import CONNECTION_ERRORS, SweepStore, now_epoch
from farm.errors import BrokerError, WorkerLostError
from farm.models import SweepReport
from farm.models.base import utc_now
from farm.plan.sweep_plan import SweepPlan
from farm.settings import FarmSettings, safe_url
from farm.sweep.executor import Submitter
from farm.sweep.lifecycle import SweepStop
from farm.sweep.observers import SweepObserver

log = logging.getLogger("farm.celery")


def create_celery_app(settings: FarmSettings) -> Any:
    """A private Celery app with the workers' settings, for publishing and inspecting."""
    from celery import Celery

    from farm.distributed.broker.celery_config import celery_settings

    app = Celery("farm", set_as_current=False)
    app.conf.update(celery_settings(settings))
    return app


def publish(app: Any, plan: SweepPlan, queue: str, *, batch: int = DEFAULT_PUBLISH_BATCH) -> None:
    """Every ``farm.run`` of the plan on ``queue``, without a cursor (``farm.distributed.delivery.publish``)."""
    runs = run_slots(plan.slots(), matrix=plan.matrix)
    send_runs(app, plan.model_copy(update={"queue": queue}), runs, queue, batch=batch)


class CeleryExecutor(SweepFollower, Submitter):
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

    def _stop_quietly(self, sweep_id: str) -> None:
        try:
            self.store().stop(sweep_id, STOP_CANCELLED)
        except Exception:
            log.debug("could not mark sweep %s stopped", sweep_id, exc_info=True)



__all__ = ["CeleryExecutor", "create_celery_app", "publish"]
