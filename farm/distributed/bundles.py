"""Bundles in the store (SPEC 24): stored once under their sha256 with their sweep's lifetime, and
a worker's view of a plan that names one (its copy unpacked once, the plan's paths moved there).

The bytes live under ``farm:bundle:<sha256>`` for FARM_RESULT_TTL; a sweep in flight keeps them as
it keeps its own keys (``SweepStore.keep_alive`` reads the sweep hash's ``bundle`` field). Two
sweeps of one tree share one key. Read with a client that does not decode (the store's decodes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import redis

from farm.bundles.pack import Bundle
from farm.bundles.relocate import Relocation
from farm.bundles.unpack import BundleError, unpacked
from farm.distributed.store import keys
from farm.distributed.store.sweep_store import SweepStore
from farm.imports.namespaces import register
from farm.plan.sweep_plan import PlannedCase, SweepPlan

__all__ = ["BundleView", "fetch_bundle", "store_bundle"]


def store_bundle(store: SweepStore, bundle: Bundle) -> bool:
    """Store ``bundle``'s bytes unless the store holds them already (then their TTL is renewed);
    True when they were sent."""
    key = keys.bundle_key(bundle.ref.sha256)
    if store.client.expire(key, store.ttl):
        return False
    store.client.set(key, bundle.data, ex=store.ttl)
    return True


def fetch_bundle(store: SweepStore, sha256: str) -> bytes | None:
    """A bundle's bytes (None: not stored), on a connection of its own that does not decode."""
    shared: Any = store.client.connection_pool
    pool = redis.ConnectionPool(connection_class=shared.connection_class,
                                **{**shared.connection_kwargs, "decode_responses": False})
    try:
        data: Any = redis.Redis(connection_pool=pool).get(keys.bundle_key(sha256))
    finally:
        pool.disconnect()
    return None if data is None else bytes(data)


class BundleView:
    """How a worker reads plans: one that names a bundle runs from its copy under ``data_dir``.
    A new copy removes those no sweep of this host used for twice FARM_RESULT_TTL.

    A bundle this worker cannot use (gone from the store, or bytes that are not its hash's) leaves
    the plan as stored and makes each of its runs an agent that cannot be built here (``check``):
    the submitter stops the sweep as a configuration error naming the bundle; no run falls back
    to whatever the submitter's paths hold on this machine."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._moves: dict[str, Relocation] = {}
        self._failures: dict[str, str] = {}

    def plan(self, store: SweepStore, plan: SweepPlan | None) -> SweepPlan | None:
        """``plan`` with its options' paths moved to its bundle's copy (unpacked the first time)."""
        if plan is None or plan.bundle is None:
            return plan
        ref = plan.bundle
        try:
            copy = unpacked(self.data_dir, ref, lambda: fetch_bundle(store, ref.sha256), keep_s=2 * store.ttl)
        except BundleError as exc:
            self._failures[ref.sha256] = exc.message
            return plan
        register(copy, ref.short)
        move = self._moves[ref.sha256] = Relocation(ref, copy)
        return move.plan(plan)

    def case(self, plan: SweepPlan | None, planned: PlannedCase | None) -> PlannedCase | None:
        """``planned`` with its paths moved as its (already viewed) plan's."""
        if planned is None or plan is None or plan.bundle is None or plan.bundle.sha256 not in self._moves:
            return planned
        return self._moves[plan.bundle.sha256].planned(planned)

    def check(self, plan: SweepPlan) -> None:
        """BundleError when ``plan``'s bundle could not be unpacked here."""
        if plan.bundle is not None and plan.bundle.sha256 in self._failures:
            raise BundleError(self._failures[plan.bundle.sha256])
