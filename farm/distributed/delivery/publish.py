"""Publishing a sweep's ``farm.run`` messages from its stored plan, behind a cursor and a lease.

The plan is stored before the first message; runs are published in plan order (case by case,
run 1..n), a batch at a time, and after each batch the publish cursor (``farm:sweep:{id}:published``)
advances and the publisher renews its lease. A publisher that dies leaves the cursor where it
was: whoever takes the lease next (a worker's reconciler, ``farm results``) publishes from there.
A batch sent twice (the old publisher's last one) only delivers runs twice: counted once.

Publishing goes in windows (issue 16): at most ``FARM_PUBLISH_WINDOW`` runs of a sweep are
queued or running at once (the cursor minus the runs settled); an attached submitter tops the
window up as runs settle, and without one the workers do (``top_up``), so Redis holds a bounded
number of messages per sweep however large the plan.

Publishing reads the plan's index (``CaseSlot``: id, runs, timeout per case), never the cases
themselves: a worker topping up a large sweep's window reads that index once per process.

Messages are built with Celery's own protocol (``app.amqp``) and nothing is tracked: ``farm.run``
reports through Redis, not through the result backend.
"""

from __future__ import annotations

import enum
import itertools
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from farm.distributed.delivery.close import drop_unpublished
from farm.distributed.store import keys
from farm.distributed.store.sweep_store import SweepStore
from farm.matrix.schedule import interleaved, made_before
from farm.models import MatrixPlan
from farm.plan.sweep_plan import CaseSlot, SweepPlan

log = logging.getLogger("farm.distributed.delivery")

SOFT_LIMIT_GRACE_S = 15.0
HARD_LIMIT_GRACE_S = 45.0
"""Per-task Celery time limits are the case timeout plus these (prefork pools enforce them; a
threads pool relies on the worker's own guard, ``farm.sweep.lifecycle.RUN_GUARD_S``)."""


FIRST_BATCH = 50
"""The first batch of a publishing turn: workers start on it while the next (a full ``batch``)
is built; 500 messages took 0.1-0.2 s to build before the first run could start."""


def new_token() -> str:
    """A lease holder's token."""
    return uuid.uuid4().hex


def run_slots(slots: Sequence[CaseSlot], start: int = 0, matrix: MatrixPlan | None = None
              ) -> Iterator[tuple[CaseSlot, int]]:
    """(case, run number) in plan order from flat position ``start`` (the publish cursor); a
    matrix's runs interleaved across its arms, as an in-process sweep makes them (SPEC 22)."""
    if matrix is not None:
        yield from interleaved(slots, _slot_runs, len(matrix.arms), matrix.seed, start)
        return
    position = 0
    for slot in slots:
        runs = slot.runs
        if position + runs <= start:
            position += runs
            continue
        for n in range(max(1, start - position + 1), runs + 1):
            yield slot, n
        position += runs


def _slot_runs(slot: CaseSlot) -> int:
    return slot.runs


def published_runs(slots: Sequence[CaseSlot], cursor: int, matrix: MatrixPlan | None = None) -> list[int]:
    """How many runs of each case the publish cursor has passed (runs 1..count of each): in plan
    order, or a matrix's interleaved one (``run_slots``)."""
    if matrix is not None:
        return made_before(slots, _slot_runs, len(matrix.arms), matrix.seed, cursor)
    counts, first = [], 0
    for slot in slots:
        counts.append(min(slot.runs, max(0, cursor - first)))
        first += slot.runs
    return counts


def _send(app: Any, producer: Any, sweep: SweepPlan, chunk: Sequence[tuple[CaseSlot, int]], queue: str) -> None:
    """One pipelined batch of ``farm.run`` messages (flushed when the batch context exits); a
    first publication and the reconciler's repair send the same message (every delivery asks
    whether its run is stored: ``workers.runs``)."""
    from kombu.utils.uuid import uuid as task_id

    amqp, sid = app.amqp, sweep.sweep_id
    sent_event = bool(app.conf.task_send_sent_event)
    with producer.batch(max_size=max(1, len(chunk))):
        for slot, n in chunk:
            timeout = slot.timeout_s
            message = amqp.create_task_message(
                task_id(), "farm.run", (sid, slot.id, n), {}, time_limit=timeout + HARD_LIMIT_GRACE_S,
                soft_time_limit=timeout + SOFT_LIMIT_GRACE_S, create_sent_event=sent_event, ignore_result=True)
            amqp.send_task_message(producer, "farm.run", message, queue=queue)


def send_runs(app: Any, sweep: SweepPlan, runs: Iterable[tuple[CaseSlot, int]], queue: str, *,
              batch: int = 500) -> int:
    """Publish ``farm.run`` for each (case, run) on one producer connection, ``batch`` a round trip;
    returns the runs sent."""
    items, sent = iter(runs), 0
    with app.producer_or_acquire() as producer:
        while chunk := list(itertools.islice(items, batch)):
            _send(app, producer, sweep, chunk, queue)
            sent += len(chunk)
    return sent


class Outcome(enum.StrEnum):
    """How a publishing turn ended."""

    DONE = "done"
    """Every run is published (the lease is released)."""
    PAUSED = "paused"
    """The window is full and the publisher does not wait: whoever sees room next goes on."""
    STOPPED = "stopped"
    """The sweep was stopped: the rest would only be dropped."""
    LOST = "lost"
    """The lease expired and another publisher may hold it."""


def publish_from_cursor(app: Any, store: SweepStore, sweep: SweepPlan, cases: Sequence[CaseSlot], *,
                        token: str, lease_ms: int, batch: int, window: int | None = None, wait: bool = False,
                        start: int | None = None, poll_s: float = 0.2) -> Outcome:
    """Publish the sweep's runs from its cursor while holding the publisher lease.

    With a ``window``, at most that many runs are queued or running at once (published and not
    settled); a full window pauses: ``wait`` tops it up as runs settle (an attached submitter),
    else the lease is released and the turn ends (workers top up as runs settle).
    """
    sid = sweep.sweep_id
    position = store.cursor(sid) if start is None else start
    if position is None:
        return Outcome.LOST
    total = sweep.total_runs  # not summed from `cases`: a compact plan's are decoded only as published
    slots = run_slots(cases, position, sweep.matrix)
    lease = keys.publisher_key(sid)
    size = min(batch, FIRST_BATCH)
    with app.producer_or_acquire() as producer:
        while position < total:
            if store.stop_reason(sid) is not None:
                return _drop_the_rest(store, sweep, cases, slots, token)
            room = size if window is None else min(size, window - (position - store.settled_total(sid)))
            if room > 0:
                chunk = list(itertools.islice(slots, room))
                if not chunk:  # the plan holds fewer runs than its cases say: nothing left to send
                    break
                # the cursor moves before the runs go (write-ahead): a publisher that dies between
                # the two leaves runs published and unsent, which the reconciler's repair sends
                # again; the other order would let the next publisher send them a second time
                position, size = position + len(chunk), batch
                store.advance_cursor(sid, position)
                _send(app, producer, sweep, chunk, sweep.queue)
                store.touch(sid)
            elif not wait:
                store.release_lease(lease, token)
                return Outcome.PAUSED
            else:
                time.sleep(poll_s)
            if not store.renew_lease(lease, token, lease_ms):
                log.warning("sweep %s: lost the publisher lease at run %d; another publisher goes on", sid, position)
                return Outcome.LOST
    store.release_lease(lease, token)
    return Outcome.DONE


def _drop_the_rest(store: SweepStore, sweep: SweepPlan, cases: Sequence[CaseSlot],
                   slots: Iterator[tuple[CaseSlot, int]], token: str) -> Outcome:
    """A stopped sweep: its unpublished runs would only be dropped, so settle them as dropped now."""
    drop_unpublished(store, sweep, cases, list(slots))
    store.release_lease(keys.publisher_key(sweep.sweep_id), token)
    return Outcome.STOPPED


_published: set[str] = set()
"""Sweeps this process saw fully published (the cursor never goes back): no more look-ups."""


TOP_UP_EVERY = 32
"""A worker looks at a sweep's window after every this many of its runs settled (three commands a
look: at every run they were a third of what a run cost Redis, bench_store.py 2026-11-25)."""


def top_up_due(settled: int, window: int) -> bool:
    """Look at the window after the run that made the sweep's settled count ``settled``? Every
    ``step``-th does (each count goes to one run only, so none is missed), and so does a run whose
    count is unknown (0: a redelivery). ``step`` is at most a quarter of the window: runs in flight
    when a look finds the window more than half full settle ``step`` more before the next look,
    which then finds it at most half full."""
    step = max(1, min(TOP_UP_EVERY, window // 4))
    return settled <= 0 or settled % step == 0


def top_up(app: Any, store: SweepStore, sweep: SweepPlan, *, lease_ms: int, batch: int, window: int) -> Outcome | None:
    """After a run settles on a worker: publish the next runs when the sweep's window is half
    empty and no publisher holds it. One round trip when there is nothing to do."""
    sid = sweep.sweep_id
    if sid in _published:
        return None
    cursor, settled, publisher = store.publishing_state(sid)
    if cursor is not None and cursor >= sweep.total_runs:
        if len(_published) > 10_000:
            _published.clear()
        _published.add(sid)
        return None
    if cursor is None or publisher or cursor - settled > window // 2:
        return None
    token = new_token()
    if not store.claim_lease(keys.publisher_key(sid), token, lease_ms):
        return None
    log.info("sweep %s: publishing from run %d of %d", sid, cursor, sweep.total_runs)
    return publish_from_cursor(app, store, sweep, ordered_slots(store, sweep), token=token, lease_ms=lease_ms,
                               batch=batch, window=window)


_SLOTS: OrderedDict[str, list[CaseSlot]] = OrderedDict()
MAX_CACHED_PLANS = 8


def ordered_slots(store: SweepStore, sweep: SweepPlan) -> list[CaseSlot]:
    """The sweep's publishing index in plan order, read once per process (a stored plan never
    changes)."""
    sid = sweep.sweep_id
    slots = _SLOTS.get(sid)
    if slots is None:
        slots = _SLOTS[sid] = store.plan_slots(sid)
        while len(_SLOTS) > MAX_CACHED_PLANS:
            _SLOTS.popitem(last=False)
    _SLOTS.move_to_end(sid)
    return slots


__all__ = ["FIRST_BATCH", "HARD_LIMIT_GRACE_S", "SOFT_LIMIT_GRACE_S", "Outcome", "new_token", "ordered_slots",
           "publish_from_cursor", "published_runs", "run_slots", "send_runs", "top_up", "top_up_due"]
