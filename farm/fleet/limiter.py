"""Shared rate limits behind the transport's limiter seam (SPEC 13).

The transport calls, for every HTTP attempt of every adapter::

    lease = await limiter.acquire(key, tokens=estimate)     # waits for the key's limits
    ...send the request...
    await lease.release(status=..., retry_after_s=..., usage=...)

``RateLimiter`` implements that protocol (``farm.agents.limiter.CallLimiter``) over a
backend: ``LocalRateBackend`` in-process, ``RedisRateBackend`` for every worker of the fleet; both run
``farm.fleet.ratestate``'s algorithm. Inside one event loop, the callers of one key queue behind
a local gate, so only the head of the queue asks the backend (one round trip per grant, not one
per waiting caller).

A key whose quota is exhausted raises ``QuotaExhaustedError`` from ``acquire``: the sweep stops
(``metadata.stopped = "quota"``). A call cancelled during the backend's round trip may leave
its lease to expire (``AdaptivePolicy.lease_ttl_s``) rather than be released.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
import uuid
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from farm.errors import QuotaExhaustedError
from farm.fleet.ratestate import AdaptivePolicy, Decision
from farm.models.usage import parse_usage
from farm.plan.rate_specs import LimitTable, RateLimit
from farm.run.waiting import QueueWaitError


class RateBackend(Protocol):
    """Where keys' states live: this process (``LocalRateBackend``) or Redis (``RedisRateBackend``)."""

    async def try_acquire(self, key: str, limit: RateLimit, policy: AdaptivePolicy, *, tokens: int, lease_id: str,
                          now: float | None = None) -> Decision: ...

    async def release(self, key: str, limit: RateLimit, policy: AdaptivePolicy, *, lease_id: str,
                      acquired_at: float, reserved_tokens: int, status: int | None, retry_after_s: float | None,
                      used_tokens: int | None, now: float | None = None) -> None: ...

    async def aclose(self) -> None: ...


@dataclass
class RateLease:
    """A granted call of ``key``; ``release`` is idempotent."""

    limiter: RateLimiter
    key: str
    limit: RateLimit
    lease_id: str
    acquired_at: float
    reserved_tokens: int
    released: bool = False

    async def release(self, *, status: int | None, retry_after_s: float | None,
                      usage: Mapping[str, int] | None) -> None:
        if self.released:
            return
        self.released = True
        parsed = parse_usage(usage)
        await self.limiter.backend.release(
            self.key, self.limit, self.limiter.policy, lease_id=self.lease_id, acquired_at=self.acquired_at,
            reserved_tokens=self.reserved_tokens, status=status, retry_after_s=retry_after_s,
            used_tokens=parsed.total_tokens if parsed is not None else None,
        )


class RateLimiter:
    """Waits out each key's pause, concurrency cap, request rate and token budget."""

    def __init__(self, backend: RateBackend, table: LimitTable | None = None,
                 policy: AdaptivePolicy | None = None, max_wait_s: float = math.inf) -> None:
        self.backend = backend
        self.max_wait_s = max_wait_s
        """How long a call may wait for its slot before ``QueueWaitError`` (``--max-queue-wait``)."""
        self.table = table or LimitTable()
        self.policy = policy or AdaptivePolicy()
        self._lock = threading.Lock()
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
            weakref.WeakKeyDictionary()
        )

    def _gate(self, key: str) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        with self._lock:
            gates = self._gates.setdefault(loop, {})
            return gates.setdefault(key, asyncio.Lock())

    async def acquire(self, key: str, *, tokens: int = 0) -> RateLease:
        """Wait until ``key`` may be called (``tokens``: the call's estimate, reserved).

        Raises:
            QuotaExhaustedError: the key's provider keeps answering 429.
            QueueWaitError: no slot within ``max_wait_s``.
            BrokerError: the Redis backend's store cannot be reached.
        """
        limit = self.table.for_key(key)
        lease_id = uuid.uuid4().hex
        give_up = time.monotonic() + self.max_wait_s
        async with self._gate(key):
            while True:
                decision = await self.backend.try_acquire(key, limit, self.policy, tokens=max(0, tokens),
                                                          lease_id=lease_id)
                if decision.granted:
                    return RateLease(self, key, limit, lease_id, decision.acquired_at_ms, decision.reserved_tokens)
                if decision.quota:
                    raise QuotaExhaustedError(
                        f"rate-limit key {key!r}: the provider's quota looks exhausted (HTTP 429 for "
                        f"{self.policy.quota_streak_s:g}s and more, with no other answer); stopping instead of retrying"
                    )
                if time.monotonic() + decision.wait_s > give_up:
                    raise QueueWaitError(f"rate-limit key {key!r}: no slot within --max-queue-wait "
                                         f"{self.max_wait_s:g}s ({limit.describe()})")
                await asyncio.sleep(decision.wait_s)

    async def aclose(self) -> None:
        await self.backend.aclose()
