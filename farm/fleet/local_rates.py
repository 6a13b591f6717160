"""The in-process rate-limit backend: ``farm.fleet.ratestate`` under a lock, on a monotonic clock.

Thread-safe and loop-agnostic (the lock is a ``threading.Lock``, no asyncio primitive is kept),
so agents called from several threads or event loops of one process share it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from farm.fleet import ratestate
from farm.fleet.ratestate import AdaptivePolicy, Decision, KeyState
from farm.plan.rate_specs import RateLimit


def monotonic_ms() -> float:
    return time.monotonic() * 1000


class LocalRateBackend:
    """Keys' states in this process's memory."""

    def __init__(self, clock: Callable[[], float] = monotonic_ms) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._states: dict[str, KeyState] = {}

    def _state(self, key: str) -> KeyState:
        return self._states.setdefault(key, KeyState())

    async def try_acquire(self, key: str, limit: RateLimit, policy: AdaptivePolicy, *, tokens: int, lease_id: str,
                          now: float | None = None) -> Decision:
        with self._lock:
            return ratestate.try_acquire(self._state(key), limit, policy, tokens=tokens, lease_id=lease_id,
                                         now=self.clock() if now is None else now)

    async def release(self, key: str, limit: RateLimit, policy: AdaptivePolicy, *, lease_id: str,
                      acquired_at: float, reserved_tokens: int, status: int | None, retry_after_s: float | None,
                      used_tokens: int | None, now: float | None = None) -> None:
        with self._lock:
            ratestate.release(self._state(key), limit, policy, lease_id=lease_id, acquired_at=acquired_at,
                              reserved_tokens=reserved_tokens, status=status, retry_after_s=retry_after_s,
                              used_tokens=used_tokens, now=self.clock() if now is None else now)

    async def aclose(self) -> None:
        """Nothing to release (the protocol's method, for symmetry with the Redis backend)."""
