"""Delivery timings, from the environment: the run lease, the reconcile period, the publisher lease.

    FARM_LEASE              seconds a published or started run may stay unsettled before it is
                            published again (default: visibility timeout + the longest case timeout)
                            A sweep quiet for ``quiet_s`` (the visibility timeout, at most 30 s) with
                            nothing running and nothing waiting in its queue has lost its unsettled
                            runs (a BRPOP cut off by a Redis restart): they go again then, sooner.
    FARM_RECONCILE_INTERVAL seconds between a worker's reconcile passes (default: lease / 4, 1..30;
                            never more than a quarter of FARM_RESULT_TTL: a pass keeps the sweep's
                            keys alive, ``SweepStore.keep_alive``)
    FARM_PUBLISHER_LEASE    seconds a publisher's lease lasts unless renewed (default 30)
    FARM_PUBLISH_BATCH      runs per published batch, after which the cursor advances (default 500;
                            a publishing turn's first batch is at most 50: workers start sooner)
    FARM_PUBLISH_WINDOW     runs of a sweep queued or running at once; topped up as runs settle
                            (default 10,000)

Kept apart from ``farm.settings`` because only delivery reads them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

from farm.errors import SettingsError

DEFAULT_PUBLISHER_LEASE_S = 30.0
DEFAULT_PUBLISH_BATCH = 500
DEFAULT_PUBLISH_WINDOW = 10_000
MAX_RECONCILE_INTERVAL_S = 30.0
MAX_QUIET_S = 30.0


def _number(env: Mapping[str, str], name: str) -> float | None:
    raw = env.get(name)
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: expected a number of seconds") from None
    if not math.isfinite(value) or value <= 0:  # inf/nan would reach the Lua scripts as text they cannot read
        raise SettingsError(f"{name}={raw!r}: must be a positive, finite number of seconds")
    return value


@dataclass(frozen=True)
class Delivery:
    """The timings of one sweep's delivery."""

    lease_s: float
    interval_s: float
    publisher_lease_s: float
    batch: int
    window: int = DEFAULT_PUBLISH_WINDOW
    quiet_s: float = MAX_QUIET_S

    @classmethod
    def from_env(cls, visibility_timeout_s: float, max_case_timeout_s: float,
                 env: Mapping[str, str] | None = None, *, result_ttl_s: float | None = None) -> Delivery:
        env = os.environ if env is None else env
        lease = _number(env, "FARM_LEASE") or (visibility_timeout_s + max_case_timeout_s)
        interval = _within_ttl(_number(env, "FARM_RECONCILE_INTERVAL")
                               or min(MAX_RECONCILE_INTERVAL_S, max(1.0, lease / 4)), result_ttl_s)
        publisher = _number(env, "FARM_PUBLISHER_LEASE") or DEFAULT_PUBLISHER_LEASE_S
        batch = max(1, int(_number(env, "FARM_PUBLISH_BATCH") or DEFAULT_PUBLISH_BATCH))
        window = max(1, int(_number(env, "FARM_PUBLISH_WINDOW") or DEFAULT_PUBLISH_WINDOW))
        quiet = min(visibility_timeout_s, lease, MAX_QUIET_S)
        return cls(lease, interval, publisher, batch, window, quiet)

    def held_s(self, max_queue_wait_s: float) -> float:
        """How long a run a live worker process took stays in flight: it may wait for its slots
        (``--max-queue-wait``), then run its lease. Past it the reconciler publishes it again and a
        copy is no duplicate (SPEC 26: waiting is never taken for a lost run)."""
        return self.lease_s + max_queue_wait_s

    @property
    def publisher_lease_ms(self) -> int:
        return int(self.publisher_lease_s * 1000)


def _within_ttl(interval: float, result_ttl_s: float | None) -> float:
    """A reconcile pass refreshes a sweep's keys once half their TTL has run down
    (``SweepStore.keep_alive``): passes at most a quarter TTL apart come before the keys expire."""
    return interval if result_ttl_s is None else min(interval, max(0.25, result_ttl_s / 4))


def reconcile_interval(env: Mapping[str, str] | None = None, *, visibility_timeout_s: float,
                       result_ttl_s: float | None = None) -> float:
    """How often a worker looks at the sweeps in flight (before it knows any sweep's timeouts)."""
    env = os.environ if env is None else env
    explicit = _number(env, "FARM_RECONCILE_INTERVAL")
    if explicit:
        return _within_ttl(explicit, result_ttl_s)
    lease = _number(env, "FARM_LEASE") or visibility_timeout_s
    return _within_ttl(min(MAX_RECONCILE_INTERVAL_S, max(1.0, lease / 4)), result_ttl_s)


__all__ = ["Delivery", "reconcile_interval"]
