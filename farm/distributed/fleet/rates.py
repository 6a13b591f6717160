"""The fleet-wide rate-limit backend: ``farm.fleet.ratestate``'s algorithm as two Lua scripts.

Every worker process of every sweep on one store shares a key's state (providers limit per API
key, not per sweep): ``farm:fleet:limit:{key}`` (hash) and ``farm:fleet:leases:{key}`` (sorted
set of leases by expiry). Acquiring and releasing are one script each, so the four gates
(pause, concurrency, GCRA requests, token bucket) are checked and taken atomically; times come
from the Redis server's clock (``TIME``), so the processes' clocks need not agree.

Why hand-written Lua and not a library: ``limits`` (async Redis storage) has fixed, moving and
sliding *window* counters only, which let a whole window's quota through in one burst (600/m
as 600 calls in the first second); it has no GCRA, no way to give back part of a reserved cost,
no expiring leases for a concurrency cap, and no shared rate that a 429 can cut. ``aiolimiter``
and ``pyrate-limiter``'s in-memory buckets do not share state between processes. Neither lets
the same algorithm run in-process and in Redis, which the conformance test relies on. No Redis
module is needed (Redis ≥ 5, ``cjson`` and ``TIME`` in scripts).
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict
from typing import Any

from farm.distributed.fleet.client import LoopClients, script_arg
from farm.distributed.store import keys
from farm.distributed.store.lua import lua_script
from farm.fleet.ratestate import (
    CONCURRENCY_POLL_S,
    EARLY_S,
    TOKEN_BUCKET_S,
    AdaptivePolicy,
    Decision,
)
from farm.plan.rate_specs import RateLimit

_HERE = "farm.distributed.fleet"

ACQUIRE_LUA = lua_script(_HERE, "rates_common.lua", "rates_acquire.lua")
"""A lease acquired, or how long to wait: the four gates checked and taken at once."""
RELEASE_LUA = lua_script(_HERE, "rates_common.lua", "rates_release.lua")
"""A lease released: tokens given back; a 429 or a Retry-After cuts the shared rate."""


@functools.lru_cache(maxsize=256)
def _parameters(limit: RateLimit, policy: AdaptivePolicy) -> str:
    """The scripts' parameters as JSON, with no nulls (``cjson`` decodes null as a true value)."""
    values: dict[str, Any] = {**asdict(limit), **asdict(policy)}
    state_ttl_s = max(policy.lease_ttl_s, policy.quota_hold_s, policy.max_pause_s, 3600.0)
    values.update(early_s=EARLY_S, bucket_s=TOKEN_BUCKET_S, poll_s=CONCURRENCY_POLL_S,
                  state_ttl_ms=int(state_ttl_s * 1000))
    return json.dumps({k: v for k, v in values.items() if v is not None})


class RedisRateBackend:
    """A rate-limit backend whose state every process on the store shares."""

    def __init__(self, url: str, *, clients: LoopClients | None = None) -> None:
        self.clients = clients or LoopClients(url)

    async def try_acquire(self, key: str, limit: RateLimit, policy: AdaptivePolicy, *, tokens: int, lease_id: str,
                          now: float | None = None) -> Decision:
        leases = keys.fleet_leases_key(key)
        code, value, need = await self.clients.run_script(
            ACQUIRE_LUA, [keys.fleet_limit_key(key), leases, f"{leases}:tickets", f"{leases}:ticket-expiry"],
            [script_arg(now), lease_id, tokens, _parameters(limit, policy)],
        )
        if int(code) == 2:
            return Decision(granted=False, quota=True)
        if int(code) == 1:
            return Decision(granted=False, wait_s=float(value) / 1000)
        return Decision(granted=True, acquired_at_ms=float(value), reserved_tokens=int(need))

    async def release(self, key: str, limit: RateLimit, policy: AdaptivePolicy, *, lease_id: str,
                      acquired_at: float, reserved_tokens: int, status: int | None, retry_after_s: float | None,
                      used_tokens: int | None, now: float | None = None) -> None:
        await self.clients.run_script(
            RELEASE_LUA, [keys.fleet_limit_key(key), keys.fleet_leases_key(key)],
            [script_arg(now), lease_id, repr(acquired_at), reserved_tokens, script_arg(status),
             script_arg(retry_after_s), script_arg(used_tokens), _parameters(limit, policy)],
        )

    async def aclose(self) -> None:
        await self.clients.aclose()
