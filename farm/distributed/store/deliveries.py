"""The delivery half of ``farm.distributed.store.sweep_store.SweepStore``: what the farm's own
delivery (``farm.distributed.delivery``) keeps in Redis to publish a sweep once and repair it:
leases (publisher, reconciler), the publish cursor, the sweep's signs of life, the runs begun
and their publications, the runs settled per case, the sweeps in flight.
"""

from __future__ import annotations

import time
from typing import Any

from farm.distributed.store import keys
from farm.distributed.store.lifetimes import begun_epoch
from farm.distributed.store.lua import CASE_HEAD_BITS


def _markers(found: dict[str, str]) -> dict[str, float]:
    """The running hash's runs (its sentinel left out): field → epoch begun."""
    return {field: begun_epoch(value) for field, value in found.items() if field != keys.SENTINEL}


class DeliveryStore:
    """Delivery reads and writes; ``SweepStore`` provides ``client``, ``ttl`` and the registered
    lease and cursor scripts."""

    client: Any
    ttl: int
    _renew: Any
    _release: Any
    _cursor: Any

    def claim_lease(self, key: str, token: str, ms: int) -> bool:
        """Take a lease (SET NX PX): True for its one holder until it expires or is released."""
        return bool(self.client.set(key, token, nx=True, px=max(1, ms)))

    def renew_lease(self, key: str, token: str, ms: int) -> bool:
        """Extend a lease still held by ``token``; False when it expired (someone may hold it now)."""
        return bool(self._renew(keys=[key], args=[token, max(1, ms)]))

    def release_lease(self, key: str, token: str) -> None:
        self._release(keys=[key], args=[token])

    def publisher_alive(self, sweep_id: str) -> bool:
        return bool(self.client.exists(keys.publisher_key(sweep_id)))

    def cursor(self, sweep_id: str) -> int | None:
        """Runs published so far; None when the plan was never stored whole."""
        value = self.client.get(keys.published_key(sweep_id))
        return None if value is None else int(value)

    def advance_cursor(self, sweep_id: str, published: int) -> int:
        return int(self._cursor(keys=[keys.published_key(sweep_id)], args=[published, self.ttl]))

    def settled_total(self, sweep_id: str) -> int:
        """Runs of the sweep settled so far (stored or dropped, each once)."""
        return int(self.client.get(keys.settled_count_key(sweep_id)) or 0)

    def publishing_state(self, sweep_id: str) -> tuple[int | None, int, bool]:
        """(publish cursor, runs settled, whether a publisher holds the lease) in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        pipe.get(keys.published_key(sweep_id))
        pipe.get(keys.settled_count_key(sweep_id))
        pipe.exists(keys.publisher_key(sweep_id))
        cursor, settled, publisher = pipe.execute()
        return (None if cursor is None else int(cursor)), int(settled or 0), bool(publisher)

    def touch(self, sweep_id: str, epoch: float | None = None) -> None:
        """Note a sign of life of the sweep (a run started or settled, a batch published)."""
        self.client.set(keys.activity_key(sweep_id), time.time() if epoch is None else epoch, ex=self.ttl)

    def last_activity(self, sweep_id: str) -> float:
        """The sweep's last sign of life: the latest of its activity key (submitted, published,
        a run dropped), its last stream entry (a run stored: the id is Redis's clock in ms) and
        its runs' markers (a run started). Read here, not written at every run."""
        pipe = self.client.pipeline(transaction=False)
        pipe.get(keys.activity_key(sweep_id))
        pipe.xrevrange(keys.stream_key(sweep_id), count=1)
        pipe.hgetall(keys.running_key(sweep_id))
        activity, last, markers = pipe.execute()
        streamed = int(str(last[0][0]).split("-")[0]) / 1000 if last else 0.0
        return max([float(activity or 0.0), streamed, *_markers(markers).values()])

    def running(self, sweep_id: str) -> dict[str, float]:
        """Runs begun and not settled: field → epoch begun (a dead worker's stay until settled)."""
        return _markers(self.client.hgetall(keys.running_key(sweep_id)))

    def attempts(self, sweep_id: str) -> dict[str, str]:
        """The ``attempts`` hash as stored (see ``farm.distributed.store.keys``)."""
        return dict(self.client.hgetall(keys.attempts_key(sweep_id)))

    def note_republished(self, sweep_id: str, fields: list[str], epoch: float) -> None:
        """Count one more publication of each run (the first one counts as 1)."""
        if not fields:
            return
        key = keys.attempts_key(sweep_id)
        pipe = self.client.pipeline(transaction=False)
        for field in fields:
            pipe.hsetnx(key, field, 1)
            pipe.hincrby(key, field, 1)
            pipe.hset(key, f"{field}@", epoch)
        pipe.expire(key, self.ttl)
        pipe.execute()

    def settled_counts(self, sweep_id: str, case_ids: list[str]) -> list[int]:
        """Runs settled per case (its barrier's counter), in the order given."""
        pipe = self.client.pipeline(transaction=False)
        for cid in case_ids:
            pipe.execute_command("BITFIELD_RO", keys.settled_key(sweep_id, cid), "GET", "u32", "#0")
        return [int(n[0]) for n in pipe.execute()]

    def unsettled(self, sweep_id: str, case_id: str, runs: int) -> list[int]:
        """Run numbers of the case not settled yet."""
        pipe = self.client.pipeline(transaction=False)
        for n in range(1, runs + 1):
            pipe.getbit(keys.settled_key(sweep_id, case_id), CASE_HEAD_BITS + n)
        return [n for n, bit in zip(range(1, runs + 1), pipe.execute(), strict=True) if not bit]

    def cases_done(self, sweep_id: str) -> set[str]:
        return {str(c) for c in self.client.smembers(keys.cases_done_key(sweep_id))}

    def in_flight_ids(self) -> list[str]:
        return [str(s) for s in self.client.zrange(keys.SWEEPS_IN_FLIGHT, 0, -1)]

    def forget_sweep(self, sweep_id: str) -> None:
        """Take a sweep whose data is gone off the in-flight set."""
        self.client.zrem(keys.SWEEPS_IN_FLIGHT, sweep_id)
