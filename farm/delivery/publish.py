"""Publishing a sweep's ``farm.run`` messages from its stored plan, behind a cursor and a lease.

The plan is stored before the first message; runs are published in plan order (case by case,
run 1..n), a batch at a time, and after each batch the publish cursor (``farm:sweep:{id}:published``)
advances and the publisher renews its lease. A publisher that dies leaves the cursor where it
was: whoever takes the lease next (a worker's reconciler, ``farm results``) publishes from there.
A batch sent twice (the old publisher's last one) only delivers runs twice: counted once.

Messages are built with Celery's own protocol (``app.amqp``) and nothing is tracked: ``farm.run``
reports through Redis, not through the result backend.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from farm import redis_keys as keys
from farm.plan import PlannedCase, SweepPlan
from farm.store import SweepStore

log = logging.getLogger("farm.delivery")

SOFT_LIMIT_GRACE_S = 15.0
HARD_LIMIT_GRACE_S = 45.0
"""Per-task Celery time limits are the case timeout plus these (prefork pools enforce them; a
threads pool relies on the worker's own guard, ``farm.lifecycle.RUN_GUARD_S``)."""


def new_token() -> str:
    """A lease holder's token."""
    return uuid.uuid4().hex


def run_slots(cases: Sequence[PlannedCase], start: int = 0) -> Iterator[tuple[PlannedCase, int]]:
    """(case, run number) in plan order from flat position ``start`` (the publish cursor)."""
    position = 0
    for planned in cases:
        runs = planned.plan.runs
        if position + runs <= start:
            position += runs
            continue
        for n in range(max(1, start - position + 1), runs + 1):
            yield planned, n
        position += runs


def send_runs(app: Any, sweep: SweepPlan, runs: Iterable[tuple[PlannedCase, int]], queue: str, *,
              batch: int = 500, after_batch: Any = None) -> int:
    """Publish ``farm.run`` for each (case, run) on one producer connection, ``batch`` a round trip;
    ``after_batch(sent)`` is called after each flushed batch and may return False to stop. Returns
    the runs sent."""
    from kombu.utils.uuid import uuid as task_id

    amqp, sid, sent = app.amqp, sweep.sweep_id, 0
    sent_event = bool(app.conf.task_send_sent_event)
    items = iter(runs)
    with app.producer_or_acquire() as producer:
        while True:
            chunk = [item for _, item in zip(range(batch), items, strict=False)]
            if not chunk:
                return sent
            with producer.batch(max_size=batch):
                for planned, n in chunk:
                    timeout = sweep.env.case_timeout(planned.case)
                    message = amqp.create_task_message(
                        task_id(), "farm.run", (sid, planned.id, n), {}, time_limit=timeout + HARD_LIMIT_GRACE_S,
                        soft_time_limit=timeout + SOFT_LIMIT_GRACE_S, create_sent_event=sent_event,
                        ignore_result=True)
                    amqp.send_task_message(producer, "farm.run", message, queue=queue)
            sent += len(chunk)
            if after_batch is not None and after_batch(sent) is False:
                return sent


def publish_from_cursor(app: Any, store: SweepStore, sweep: SweepPlan, cases: Sequence[PlannedCase], *,
                        token: str, lease_ms: int, batch: int, start: int | None = None) -> bool:
    """Publish the sweep's runs from its cursor to the end while holding the publisher lease.

    True when every run is published (the lease is then released); False when the lease was lost
    to another publisher, or the sweep was stopped (the runs not published would only be dropped).
    """
    sid = sweep.sweep_id
    begin = store.cursor(sid) if start is None else start
    if begin is None:
        return False
    lost: list[bool] = []

    def advance(sent: int) -> bool:
        store.advance_cursor(sid, begin + sent)
        store.touch(sid)
        if not store.renew_lease(keys.publisher_key(sid), token, lease_ms):
            lost.append(True)
            log.warning("sweep %s: lost the publisher lease at run %d; another publisher goes on", sid, begin + sent)
            return False
        return store.stop_reason(sid) is None  # stopped: the rest would only be dropped

    sent = send_runs(app, sweep, run_slots(cases, begin), sweep.queue, batch=batch, after_batch=advance)
    if not lost:
        store.release_lease(keys.publisher_key(sid), token)
    return not lost and begin + sent >= sum(c.plan.runs for c in cases)


__all__ = ["HARD_LIMIT_GRACE_S", "SOFT_LIMIT_GRACE_S", "new_token", "publish_from_cursor", "run_slots", "send_runs"]
