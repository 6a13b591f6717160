"""The farm's tasks, by stable names Flower shows: plain values in, farm code, plain dicts out.

Per case, ``farm.run`` × its runs, then ``farm.aggregate`` as the case's callback (SPEC's "chord
callback"), fired by the farm's own Redis barrier rather than Celery's chord primitive; the
aggregate that completes the last case enqueues ``farm.report``. The work is in
``workers.runs`` (``farm.run``), ``workers.finish`` (``farm.aggregate``, ``farm.report``) and
``workers.nightly``; the tasks only turn Celery's arguments into calls and transient Redis
faults into retries.

Why not a Celery chord: per run it cost a result-backend write and ``on_chord_part_return`` in
the worker (about a fifth of its CPU), and in the submitter a ``GroupResult`` that subscribed to
one pub/sub channel per run and never let go (88 → 378 MB at 10k → 100k runs).
``farm.run`` now stores nothing in the result backend (``ignore_result``).

The barrier: storing a run (or dropping it, when the sweep is stopped) sets its bit in the
case's ``settled`` bitfield in the same atomic Lua step that stores it once, so a redelivered run
never counts twice. The call that sets the case's last bit enqueues ``farm.aggregate`` before its
message is acked. If its worker dies between counting and enqueuing, the message comes back
(acks late) and finds the run settled already: a redelivered run re-enqueues the aggregate
whenever the case is complete and not yet in ``cases-done`` (which only the aggregate sets, once
it has stored the case). No latch can strand the case, and a rare duplicate aggregate is harmless:
``farm.aggregate`` is idempotent (stats stored and streamed once, report behind its latch).
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Any

import redis
from celery import Task, signals
from celery.exceptions import Reject, SoftTimeLimitExceeded
from kombu.exceptions import OperationalError

from farm import collector
from farm.distributed.delivery.config import Delivery, reconcile_interval
from farm.distributed.delivery.publish import top_up, top_up_due
from farm.distributed.delivery.reconcile import Reconciler
from farm.distributed.store.keys import report_latch_ttl
from farm.distributed.store.sweep_store import SweepStore
from farm.history.worker import record_finished_sweep
from farm.plan.sweep_plan import SweepPlan
from farm.settings import is_amqp_url
from workers.app import SETTINGS, app
from workers.context import CACHE, get_store
from workers.crashes import holder_lapse_s
from workers.finish import aggregate_case, report_sweep
from workers.nightly import start_nightly
from workers.runs import run_one

AGGREGATE_RETRY_S = 2
AGGREGATE_MAX_RETRIES = 30
"""An aggregate that finds runs missing waits this many times, then stores what is there."""

log = logging.getLogger("farm.worker")

_TRANSIENT = (redis.ConnectionError, redis.TimeoutError, OperationalError)


def _store(task: Task) -> SweepStore:
    return get_store(SETTINGS.replace(broker_url=task.app.conf.broker_url).store_url, SETTINGS.result_ttl_s)


def _fire_aggregate(sweep_id: str, case_id: str, queue: str) -> None:
    aggregate_task.apply_async(args=(sweep_id, case_id), queue=queue)


@app.task(name="farm.run", bind=True, ignore_result=True)
def run_task(self: Task, sweep_id: str, case_id: str, run: int, again: bool = False) -> dict[str, Any]:
    """One run of one case; never fails: when Redis stays away, the message goes back on the queue.

    The run's marker is set as it begins (``SweepStore.begin_run``: its lease, for the
    reconciler, starts then) and cleared by the step that settles it; every delivery asks first
    whether its run is stored already. ``again`` (the reconciler marked its copies so until
    2026-11-28) is accepted and ignored: messages of older workers carry it. A copy that finds its
    run in flight on a live worker is dropped (the holder settles it: paid once). RabbitMQ
    redelivers a consumer's messages at once when its connection closes: its process killed (its
    heartbeat still looks alive for a few seconds) or only its connection lost (the process runs
    on and settles the run). Such a copy waits for the holder's heartbeat to lapse (a death: it
    runs) before it is dropped (``holder_lapse_s``). Redis's redelivery comes after the
    visibility timeout, when a dead holder's heartbeat has expired (workers.crashes), so a live
    holder there holds a message restored from its prefetch while it ran it."""
    del again  # every copy is treated alike now; the argument stays for messages in queues
    try:
        store = _store(self)
        redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
        at_once = redelivered and is_amqp_url(self.app.conf.broker_url)
        outcome = run_one(store, sweep_id, case_id, run, interrupts=(SoftTimeLimitExceeded,),
                          fire=_fire_aggregate, held_s=_held_s, await_holder_s=holder_lapse_s() if at_once else 0.0)
        _top_up(self, store, sweep_id, int(outcome.get("sweep_settled", 0)))
        return outcome
    except _TRANSIENT as exc:
        # Failing would leave its case short of the barrier forever; requeued, it runs again and
        # counts once (and re-fires the aggregate if storing worked but enqueuing did not).
        raise Reject(f"redis unavailable: {exc}", requeue=True) from exc


@functools.lru_cache(maxsize=64)
def _delivery(max_case_timeout_s: float) -> Delivery:
    """A sweep's delivery settings, read from the environment once per case timeout, not per run."""
    return Delivery.from_env(SETTINGS.visibility_timeout_s, max_case_timeout_s)


def _held_s(sweep: SweepPlan) -> float:
    """How long a run a live worker process took stays in flight (``Delivery.held_s``)."""
    return _delivery(sweep.max_case_timeout_s).held_s(sweep.fleet.max_queue_wait_s)


def _top_up(task: Task, store: SweepStore, sweep_id: str, settled: int) -> None:
    """Publish the sweep's next window when it runs low and no publisher holds it (``farm.distributed.delivery``);
    looked at after every few runs of the sweep settled (``top_up_due``), not after each."""
    try:
        sweep = CACHE.sweep(store, sweep_id)
        if sweep is None:
            return
        delivery = _delivery(sweep.max_case_timeout_s)
        if not top_up_due(settled, delivery.window):
            return
        top_up(task.app, store, sweep, lease_ms=delivery.publisher_lease_ms, batch=delivery.batch,
               window=delivery.window)
    except Exception:  # the run is stored: never requeue it for this; the reconciler tops up later
        log.warning("sweep %s: could not publish its next window", sweep_id, exc_info=True)


@app.task(name="farm.aggregate", bind=True, autoretry_for=_TRANSIENT, retry_backoff=True,
          max_retries=AGGREGATE_MAX_RETRIES, ignore_result=True)
def aggregate_task(self: Task, sweep_id: str, case_id: str) -> dict[str, Any]:
    """Callback of one case (fired by the barrier): its statistics; the last case enqueues ``farm.report``.

    Nothing reads its return value from the result backend (Flower shows it from task events), so
    none is stored there: it cost Redis MULTI SETEX PUBLISH EXEC a case (bench_store.py)."""
    store = _store(self)
    final = self.request.retries >= AGGREGATE_MAX_RETRIES
    outcome = aggregate_case(store, sweep_id, case_id, final=final)
    if outcome is None:
        return {"sweep": sweep_id, "case": case_id, "status": "dropped"}
    if not outcome.complete:
        raise self.retry(countdown=AGGREGATE_RETRY_S)
    if outcome.sweep_done and store.claim_report(sweep_id, report_latch_ttl(SETTINGS.visibility_timeout_s)):
        try:
            report_task.apply_async(args=(sweep_id,), queue=outcome.queue)
        except Exception:
            store.release_report(sweep_id)  # let the retry enqueue it
            raise
    return {"sweep": sweep_id, "case": case_id, "cases_done": outcome.cases_done,
            "total_cases": outcome.total_cases}


@app.task(name="farm.report", bind=True, autoretry_for=_TRANSIENT, retry_backoff=True, max_retries=20)
def report_task(self: Task, sweep_id: str) -> dict[str, Any]:
    """Last task of a sweep: the report, stored once, and the ``finish`` event; then its history."""
    store = _store(self)
    stored = report_sweep(store, sweep_id)
    recorded = record_finished_sweep(lambda: store.get_report(sweep_id))  # only with FARM_HISTORY_URL
    return {"sweep": sweep_id, "stored": stored, "history": recorded}


_reconcilers: list[Reconciler] = []

PER_RUN_LOGGERS = ("celery.worker.strategy", "celery.app.trace")
"""Celery's two INFO lines per task ("received", "succeeded in"), warnings and errors kept."""


@signals.after_setup_logger.connect
def quiet_per_run_lines(sender: Any = None, loglevel: int | None = None, **_: Any) -> None:
    """No INFO line per run unless FARM_LOG_RUNS=1 (``farm worker --log-runs``) or ``-l DEBUG``: at
    hundreds of runs a second they cost CPU and bury the farm's own lines (issue 16)."""
    if os.environ.get("FARM_LOG_RUNS") == "1" or (loglevel is not None and loglevel <= logging.DEBUG):
        return
    for name in PER_RUN_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


@signals.worker_ready.connect
def ease_collector(sender: Any = None, **_: Any) -> None:
    """Runs allocate short-lived objects by the hundred: the worker's collector is eased for good
    (``farm.collector``), its loaded modules and app left out of every collection."""
    collector.ease_for_good()


@signals.worker_ready.connect
def start_reconciler(sender: Any = None, **_: Any) -> None:
    """Every worker reconciles the sweeps in flight in the background (``farm.distributed.delivery``), so a
    sweep finishes with no submitter attached."""
    if _reconcilers:
        return
    vt = SETTINGS.visibility_timeout_s
    reconciler = Reconciler(lambda: get_store(SETTINGS.store_url, SETTINGS.result_ttl_s), app,
                            visibility_timeout_s=vt,
                            interval_s=reconcile_interval(visibility_timeout_s=vt, result_ttl_s=SETTINGS.result_ttl_s))
    _reconcilers.append(reconciler)
    reconciler.start()


@signals.worker_shutdown.connect
def stop_reconciler(sender: Any = None, **_: Any) -> None:
    for reconciler in _reconcilers:
        reconciler.stopping.set()


@app.task(name="farm.nightly", bind=True)
def nightly_task(self: Task, suite: str) -> str:
    """Beat's nightly sweep of FARM_NIGHTLY_SUITE; returns the sweep id."""
    return start_nightly(suite, self.app.conf.broker_url, os.environ.get("FARM_NIGHTLY_ARGS"))
