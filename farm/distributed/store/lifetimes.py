"""The lifetime half of ``farm.distributed.store.sweep_store.SweepStore``: what the reconciler
reads of a sweep's life and does to keep it (``farm.distributed.delivery.reconcile``).

- ``keep_alive``: a sweep in flight outlives FARM_RESULT_TTL (SPEC 26).
- ``held_runs``: the runs begun and not settled, and whether the worker process that began each
  still lives (its heartbeat key): waiting is not being lost.
- ``published_epoch``: no run published so far went out after it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

from farm.distributed.store import keys
from farm.plan.sweep_plan import CaseSlot


def begun_epoch(marker: str) -> float:
    """The epoch a running marker was set (``BEGIN_RUN_LUA``)."""
    try:
        return float(json.loads(marker)["t"])
    except (ValueError, KeyError, TypeError):
        return 0.0


def marker_holder(marker: str) -> str | None:
    """The heartbeat token of the worker process that began a run (``BEGIN_RUN_LUA``), if any."""
    try:
        found = json.loads(marker)
    except ValueError:
        return None
    return str(found["h"]) if isinstance(found, dict) and found.get("h") else None


class LifetimeStore:
    """Lifetime reads and refreshes; ``SweepStore`` provides ``client``, ``ttl`` and ``plan_slots``."""

    client: Any
    ttl: int
    plan_slots: Callable[[str], list[CaseSlot]]

    def held_runs(self, sweep_id: str) -> dict[str, tuple[float, bool]]:
        """Runs begun and not settled: field → (epoch begun, whether the worker process that began
        it is alive: its heartbeat key is there). One HGETALL and one pipelined EXISTS per holder."""
        found = {f: v for f, v in self.client.hgetall(keys.running_key(sweep_id)).items() if f != keys.SENTINEL}
        holders = {field: marker_holder(value) for field, value in found.items()}
        distinct = sorted({h for h in holders.values() if h})
        pipe = self.client.pipeline(transaction=False)
        for holder in distinct:
            pipe.exists(keys.worker_alive_key(holder))
        alive = {h for h, exists in zip(distinct, pipe.execute() if distinct else [], strict=True) if exists}
        return {field: (begun_epoch(found[field]), holders[field] in alive) for field in found}

    def published_epoch(self, sweep_id: str) -> float:
        """The sweep's activity key: written when a batch is published (or republished, or a run
        dropped), so no run published so far went out after it."""
        return float(self.client.get(keys.activity_key(sweep_id)) or 0.0)

    def keep_alive(self, sweep_id: str, *, chunk: int = 1000) -> bool:
        """A sweep in flight outlives FARM_RESULT_TTL (SPEC 26): once half of its plan's TTL has
        run down, every key of the sweep (plan, barriers, runs stored, stream…) gets a full TTL
        again. One PTTL a call (a reconcile pass), the refresh one EXPIRE per key, pipelined, at
        most every half TTL. True when it refreshed."""
        left_ms = int(self.client.pttl(keys.sweep_key(sweep_id)))
        if left_ms < 0 or left_ms > self.ttl * 500:  # gone (-2), kept for good (-1), or fresh enough
            return False
        bundle = self.client.hget(keys.sweep_key(sweep_id), "bundle")

        def names() -> Iterator[str]:  # made as sent: a 100M-run sweep's names never held at once
            yield from keys.lived_keys(sweep_id)
            if bundle:  # its bundle (farm.distributed.bundles) lives as long as the sweep
                yield keys.bundle_key(str(bundle))
            for slot in self.plan_slots(sweep_id):
                yield keys.settled_key(sweep_id, slot.id)
                yield from (keys.run_key(sweep_id, slot.id, n) for n in range(1, slot.runs + 1))

        pending = names()
        while batch := list(itertools.islice(pending, chunk)):
            pipe = self.client.pipeline(transaction=False)
            for name in batch:
                pipe.expire(name, self.ttl)
            pipe.execute()
        return True


__all__ = ["LifetimeStore", "begun_epoch", "marker_holder"]
