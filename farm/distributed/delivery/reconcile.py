"""Reconciliation: what a sweep planned against what is settled, repaired without the submitter.

One pass over a sweep (``reconcile_sweep``), in this order:

1. Finished (report stored) or gone: take it off the in-flight set. Else its keys get a full TTL
   again once half of it has run down (``SweepStore.keep_alive``): a sweep in flight never expires.
2. Plan never stored whole (no publish cursor) and no publisher: close it ``abandoned``.
3. Stopped (cancel, fail-fast, budget…): close it with what ran once it has been idle a while
   (at once when ``close_stopped``: ``farm results`` on a stopped sweep answers at once).
4. Publish cursor short of the plan and no publisher holds the lease (it vanished, or left a
   full window to the workers): take the lease and publish the next window.
5. Idle for a whole lease (no run started or settled, nothing published): the runs that are
   lost are published again, their attempts counted; a complete case never aggregated is
   aggregated, a sweep with every case aggregated gets its report. Sooner when the sweep is
   merely quiet (``Delivery.quiet_s``) but nothing of it runs and its queue is empty: then no
   run can be waiting anywhere, and the unsettled ones were lost (a Redis restart cutting a
   BRPOP short) — waiting out a case timeout would only stall it.

What is lost (SPEC 11/26): waiting is never taken for it (issue 37: runs waiting for a rate-limit
slot, or in a queue behind another sweep's backlog, were published again and paid twice).

- A run a worker took (its marker) whose worker process died: lost once its lease ran out.
- A run a live worker process holds: it may wait for its slots (``--max-queue-wait``) and then
  run its lease; lost only past both (a thread stuck past every timeout).
- A run no worker took has no lease: it waits in the broker. Lost at once (the pass's gate) when
  the broker cannot hold it any more: its queue is empty (ready messages) and no live worker
  holds a run of the sweep (a message a worker reserved waits behind the runs it holds).
  Otherwise lost once it went out longer ago than the lease plus a horizon: twice the time the
  sweep's observed rate (runs settled a second) takes to get through the ``depth`` messages of
  its queue (of every sweep: a shared queue) and the runs live workers hold (a broker restart
  that lost some messages among others). Redis and RabbitMQ both answer the depth; a broker
  that cannot is given as long as a run a live worker took.

A duplicate is harmless: a run is stored once (the settled bitfield and SET NX), aggregates and
reports are idempotent. ``Reconciler`` is the thread every worker runs; a Redis lease per sweep
(SET NX PX) lets one worker at a time reconcile it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from farm.distributed.broker.queues import waiting_messages
from farm.distributed.delivery.close import aggregate, close, report
from farm.distributed.delivery.config import Delivery
from farm.distributed.delivery.publish import (
    Outcome,
    new_token,
    ordered_slots,
    publish_from_cursor,
    published_runs,
    send_runs,
)
from farm.distributed.store import keys
from farm.distributed.store.sweep_store import SweepStore
from farm.plan.sweep_plan import CaseSlot, SweepPlan
from farm.sweep.lifecycle import SweepStatus

log = logging.getLogger("farm.distributed.delivery")


def reconcile_sweep(store: SweepStore, app: Any, sweep_id: str, *, visibility_timeout_s: float,
                    close_stopped: bool = False, repair: bool = True, now: float | None = None) -> str:
    """One reconcile pass over a sweep; returns what it did (for logs and tests)."""
    now = time.time() if now is None else now
    sid = sweep_id
    if store.has_report(sid):
        store.forget_sweep(sid)
        return "finished"
    sweep = store.load_sweep(sid)
    if sweep is None:
        store.forget_sweep(sid)
        return "gone"
    store.keep_alive(sid)  # in flight: its keys outlive FARM_RESULT_TTL
    delivery = Delivery.from_env(visibility_timeout_s, sweep.max_case_timeout_s)
    cursor = store.cursor(sid)
    if cursor is None:
        return _abandon_unstored(store, sweep)
    cases = ordered_slots(store, sweep)
    total = sum(c.runs for c in cases)
    idle = now - store.last_activity(sid)
    if store.stop_reason(sid) is not None:
        unpublished = cursor < total
        return _close_stopped(store, app, sweep, cases, delivery, unpublished, now=now, idle=idle,
                              close_stopped=close_stopped)
    if cursor < total:
        if not _take_publisher(store, sid, delivery):
            return "publishing"
        log.info("sweep %s: publishing from run %d of %d", sid, cursor, total)
        outcome = publish_from_cursor(app, store, sweep, cases, token=_TOKEN, lease_ms=delivery.publisher_lease_ms,
                                      batch=delivery.batch, window=delivery.window)
        if outcome is not Outcome.PAUSED:  # a full window that does not drain may hold lost runs: repair below
            return f"published ({outcome.value})"
        cursor = store.cursor(sid) or 0
    if not repair:
        return "alive"
    if idle >= delivery.lease_s:
        return _repair(store, app, sid, cases, delivery, now, cursor, lost_after_s=delivery.lease_s)
    if idle >= delivery.quiet_s and _nothing_anywhere(store, app, sweep.queue, sid, now, delivery):
        return _repair(store, app, sid, cases, delivery, now, cursor, lost_after_s=delivery.quiet_s)
    return "alive"


def _abandon_unstored(store: SweepStore, sweep: SweepPlan) -> str:
    """Step 2: a plan never stored whole is closed ``abandoned`` unless its publisher still saves it."""
    if store.publisher_alive(sweep.sweep_id):
        return "saving"
    report(store, sweep, status=SweepStatus.ABANDONED,
           reason="its submitter vanished before the plan was stored whole; submit it again")
    log.warning("sweep %s abandoned: its plan was never stored whole", sweep.sweep_id)
    return "abandoned"


def _close_stopped(store: SweepStore, app: Any, sweep: SweepPlan, cases: list[CaseSlot], delivery: Delivery,
                   unpublished: bool, *, now: float, idle: float, close_stopped: bool) -> str:
    """Step 3: a stopped sweep settles its unpublished rest as dropped, then closes with what ran
    once it is idle (at once when ``close_stopped``)."""
    sid = sweep.sweep_id
    if unpublished and _take_publisher(store, sid, delivery):  # settles the unpublished rest as dropped
        publish_from_cursor(app, store, sweep, cases, token=_TOKEN, lease_ms=delivery.publisher_lease_ms,
                            batch=delivery.batch, window=delivery.window)
    busy = any(now - started < delivery.lease_s for started in store.running(sid).values())
    if close_stopped or (idle >= 2 * delivery.interval_s and not busy):
        close(store, sweep, cases)
        return "closed"
    return "stopping"


def _nothing_anywhere(store: SweepStore, app: Any, queue: str, sid: str, now: float, delivery: Delivery) -> bool:
    """No run of the sweep started within its lease and none waits in its queue (another
    sweep's messages there count too: then it may just be waiting its turn)."""
    if any(now - started < delivery.lease_s for started in store.running(sid).values()):
        return False
    return _queue_depth(app, queue) == 0


def _queue_depth(app: Any, queue: str) -> int | None:
    """Messages ready in the queue (of every sweep on it); None when the broker cannot say."""
    try:
        return waiting_messages(app, [queue]).get(queue, 0)
    except Exception:  # the broker cannot say: whoever asks waits instead
        log.debug("cannot count the messages in queue %s", queue, exc_info=True)
        return None


@dataclass(frozen=True)
class _Horizons:
    """How long an unsettled run may go without a sign of life before it counts as lost."""

    dead_s: float
    """Taken by a worker process that died (its lease)."""
    alive_s: float
    """Taken by a live worker process: its slot waits, then its lease."""
    untaken_s: float
    """Taken by no worker, from its publication (or its last republication)."""


HORIZON_MARGIN = 2.0
"""The untaken horizon is this many times the time the sweep's observed rate takes to get through
what is ahead of a message: rates vary (a 429 halves them), and waiting costs less than paying twice."""


def _horizons(store: SweepStore, app: Any, sweep: SweepPlan, delivery: Delivery, now: float, lost_after_s: float,
              held_alive: int) -> _Horizons:
    """``held_alive``: runs of the sweep held by live worker processes (within their horizon)."""
    alive_s = delivery.held_s(sweep.fleet.max_queue_wait_s)
    depth = _queue_depth(app, sweep.queue)
    untaken: float
    if depth is None:  # the broker cannot say: as long as a run a live worker took may take
        untaken = lost_after_s + alive_s
    elif depth == 0 and not held_alive:  # nothing waits in the broker, no worker is busy with the sweep
        untaken = lost_after_s
    else:  # behind the queue's messages, or reserved by a worker behind the runs it holds
        elapsed = now - store.submitted_epoch(sweep.sweep_id)
        settled = store.settled_total(sweep.sweep_id)
        rate = settled / elapsed if settled and elapsed > 0 else 1.0 / delivery.lease_s
        untaken = lost_after_s + delivery.lease_s + HORIZON_MARGIN * (depth + held_alive) / rate
    return _Horizons(lost_after_s, alive_s, untaken)


_TOKEN = new_token()
"""This process's publisher token when it takes over a sweep's publishing."""


def _take_publisher(store: SweepStore, sweep_id: str, delivery: Delivery) -> bool:
    return store.claim_lease(keys.publisher_key(sweep_id), _TOKEN, delivery.publisher_lease_ms)


def _repair(store: SweepStore, app: Any, sid: str, cases: list[CaseSlot], delivery: Delivery, now: float,
            cursor: int, *, lost_after_s: float) -> str:
    """Republish the runs published (before ``cursor``) but neither settled nor running (nor
    published again) within ``lost_after_s``; aggregate complete cases whose aggregate was lost;
    report a sweep all aggregated."""
    sweep = store.load_sweep(sid)
    if sweep is None:
        return "gone"
    resend, lost_aggregates = _lost(store, app, sweep, cases, delivery, cursor, now, lost_after_s)
    aggregated = 0
    for full in store.load_cases(sid, lost_aggregates):
        aggregate(store, sweep, full, final=True)
        aggregated += 1
    if resend:
        fields = [keys.run_field(p.id, n) for p, n in resend]
        store.note_republished(sid, fields, now)
        send_runs(app, sweep, resend, sweep.queue, batch=delivery.batch)
        store.touch(sid, now)
        log.warning("sweep %s: %d runs neither settled nor running within %gs: published again",
                    sid, len(resend), lost_after_s)
        return f"republished {len(resend)}"
    if cursor >= sum(c.runs for c in cases) and len(store.cases_done(sid)) >= len(cases):
        report(store, sweep)
        return "reported"
    return f"aggregated {aggregated}" if aggregated else "waiting"


def _lost(store: SweepStore, app: Any, sweep: SweepPlan, cases: list[CaseSlot], delivery: Delivery, cursor: int,
          now: float, lost_after_s: float) -> tuple[list[tuple[CaseSlot, int]], list[str]]:
    """The runs published (before ``cursor``), not settled, and lost (see the module's docstring;
    ``lost_after_s`` is the lease of a dead worker's run), and the complete cases whose aggregate
    was lost."""
    sid = sweep.sweep_id
    counts = store.settled_counts(sid, [c.id for c in cases])
    done = store.cases_done(sid)
    held, attempts = store.held_runs(sid), store.attempts(sid)
    horizons: _Horizons | None = None  # asked of the broker only when some run is unsettled
    published = 0.0
    resend: list[tuple[CaseSlot, int]] = []
    lost_aggregates: list[str] = []
    for planned, count, sent in zip(cases, counts, published_runs(cases, cursor, sweep.matrix), strict=True):
        if count >= planned.runs:
            if planned.id not in done:  # its aggregate was lost (or died): aggregate it here
                lost_aggregates.append(planned.id)
            continue
        if not sent:
            continue  # not published yet
        for n in store.unsettled(sid, planned.id, sent):
            if horizons is None:
                alive_s = delivery.held_s(sweep.fleet.max_queue_wait_s)
                horizons = _horizons(store, app, sweep, delivery, now, lost_after_s, held_alive=sum(
                    1 for begun, alive in held.values() if alive and now - begun < alive_s))
                published = store.published_epoch(sid)
            field = keys.run_field(planned.id, n)
            republished = float(attempts.get(f"{field}@", 0.0))
            if field in held:
                begun, alive = held[field]
                horizon = horizons.alive_s if alive else horizons.dead_s
                seen = max(begun, republished)
            else:
                horizon, seen = horizons.untaken_s, max(published, republished)
            if now - seen >= horizon:
                resend.append((planned, n))
    return resend, lost_aggregates


class Reconciler(threading.Thread):
    """A worker's background reconciler: every ``interval_s``, each sweep in flight whose
    reconciler lease it wins. Never raises: a Redis outage only postpones the next pass."""

    def __init__(self, store_for: Callable[[], SweepStore], app: Any, *, visibility_timeout_s: float,
                 interval_s: float) -> None:
        super().__init__(name="farm-reconciler", daemon=True)
        self.store_for, self.app = store_for, app
        self.visibility_timeout_s, self.interval_s = visibility_timeout_s, interval_s
        self.stopping = threading.Event()
        self.token = new_token()

    def run(self) -> None:
        while not self.stopping.wait(self.interval_s):
            try:
                self.reconcile_all()
            except Exception:
                log.warning("reconcile pass failed; retrying in %gs", self.interval_s, exc_info=True)

    def reconcile_all(self) -> None:
        store = self.store_for()
        lease_ms = max(1, int(self.interval_s * 1000))
        for sid in store.in_flight_ids():
            if self.stopping.is_set():
                return
            if not store.claim_lease(keys.reconciler_key(sid), self.token, lease_ms):
                continue  # another worker reconciles it this round
            try:
                outcome = reconcile_sweep(store, self.app, sid, visibility_timeout_s=self.visibility_timeout_s)
            except Exception:
                log.warning("cannot reconcile sweep %s", sid, exc_info=True)
                continue
            if outcome not in ("alive", "publishing", "stopping", "waiting", "saving", "published (paused)"):
                log.info("sweep %s reconciled: %s", sid, outcome)


__all__ = ["Reconciler", "reconcile_sweep"]
