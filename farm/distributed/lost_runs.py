"""Runs lost with a worker: begun by a worker process that is no longer alive, not yet published again.

A worker killed outright (SIGKILL, the OOM killer, a lost machine) leaves its runs' markers in
the sweep's ``running`` hash; each names its holder, whose heartbeat key
(``farm.distributed.store.keys.worker_alive_key``) expires with it. The reconciler publishes such runs
again once the sweep has been idle for a whole lease (``farm.distributed.delivery.reconcile``); until then
the progress stops a few runs short. ``farm status`` says so, and when they come back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from farm.distributed.delivery.config import Delivery
from farm.distributed.store import keys
from farm.distributed.store.lifetimes import marker_holder


@dataclass(frozen=True)
class LostRuns:
    """Runs of one sweep whose worker died with them in flight."""

    count: int
    back_epoch: float
    """When the reconciler publishes them again (the sweep idle for a whole lease), at the latest."""


def lost_runs(store: Any, sweep_id: str, visibility_timeout_s: float) -> LostRuns | None:
    """The sweep's runs held by dead worker processes, or None when there are none."""
    markers = store.client.hgetall(keys.running_key(sweep_id))
    holders = {field: marker_holder(raw) for field, raw in markers.items()}
    distinct = sorted({h for h in holders.values() if h})
    if not distinct:
        return None
    pipe = store.client.pipeline(transaction=False)
    for holder in distinct:
        pipe.exists(keys.worker_alive_key(holder))
    alive = {h for h, exists in zip(distinct, pipe.execute(), strict=True) if exists}
    lost = sum(1 for h in holders.values() if h and h not in alive)
    if not lost:
        return None
    sweep = store.load_sweep(sweep_id)
    lease = Delivery.from_env(visibility_timeout_s, sweep.max_case_timeout_s if sweep else 0.0).lease_s
    return LostRuns(lost, store.last_activity(sweep_id) + lease)


__all__ = ["LostRuns", "lost_runs"]
