"""One key's rate-limit algorithm, the same on both backends (in-process and Redis Lua).

Every scenario runs on a virtual clock (``now`` in milliseconds, passed to both backends), so
the exact arithmetic of GCRA, the token bucket, leases and AIMD is checked, not timing.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from farm.distributed.fleet.rates import RedisRateBackend
from farm.fleet.local_rates import LocalRateBackend
from farm.fleet.ratestate import CONCURRENCY_POLL_S, EARLY_S, AdaptivePolicy, Decision
from farm.plan.rate_specs import RateLimit

POLICY = AdaptivePolicy(recovery_per_s=0.05, cooldown_s=1.0, quota_strikes=3, quota_streak_s=1.0, quota_hold_s=5.0)
T0 = 1_700_000_000_000.0
"""A virtual epoch in ms (as Redis TIME would give), so float precision is tested as deployed."""


class Key:
    """One key on one backend, driven synchronously on a virtual clock."""

    def __init__(self, backend: Any, limit: RateLimit, policy: AdaptivePolicy = POLICY) -> None:
        self.backend, self.limit, self.policy = backend, limit, policy
        self.name = f"k-{uuid.uuid4().hex[:8]}"
        self.loop = asyncio.new_event_loop()

    def acquire(self, at_ms: float, tokens: int = 0) -> tuple[Decision, str]:
        lease = uuid.uuid4().hex
        decision = self.loop.run_until_complete(self.backend.try_acquire(
            self.name, self.limit, self.policy, tokens=tokens, lease_id=lease, now=T0 + at_ms))
        return decision, lease

    def grant(self, at_ms: float, tokens: int = 0) -> tuple[str, Decision]:
        decision, lease = self.acquire(at_ms, tokens)
        assert decision.granted, f"not granted at {at_ms} ms: {decision}"
        return lease, decision

    def release(self, at_ms: float, lease: str, decision: Decision, *, status: int | None = 200,
                retry_after_s: float | None = None, used: int | None = None) -> None:
        self.loop.run_until_complete(self.backend.release(
            self.name, self.limit, self.policy, lease_id=lease, acquired_at=decision.acquired_at_ms,
            reserved_tokens=decision.reserved_tokens, status=status, retry_after_s=retry_after_s,
            used_tokens=used, now=T0 + at_ms))

    def close(self) -> None:
        self.loop.run_until_complete(self.backend.aclose())
        self.loop.close()


@pytest.fixture(params=["local", pytest.param("redis", marks=[pytest.mark.redis, pytest.mark.slow])])
def make_key(request: pytest.FixtureRequest) -> Iterator[Callable[..., Key]]:
    made: list[Key] = []

    def create(limit: RateLimit, policy: AdaptivePolicy = POLICY) -> Key:
        if request.param == "local":
            backend: Any = LocalRateBackend()
        else:
            request.getfixturevalue("redis_client")  # an empty database, emptied again after
            backend = RedisRateBackend(request.getfixturevalue("redis_server"))
        made.append(Key(backend, limit, policy))
        return made[-1]

    yield create
    for key in made:
        key.close()


def test_requests_are_spaced_by_gcra_with_no_burst_from_idle(make_key: Callable[..., Key]) -> None:
    """At 10/s: the first call opens the grid, each next one waits its interval (100 ms)."""
    key = make_key(RateLimit(requests_per_s=10))
    key.grant(0)
    refused, _ = key.acquire(0)  # no burst: two at once would be 11 in the first second
    assert not refused.granted and refused.wait_s == pytest.approx(0.1)
    granted_in_first_second = 1
    at = 0.0
    while True:
        decision, _ = key.acquire(at)
        if decision.granted:
            granted_in_first_second += at < 1000
            if at >= 1000:
                break
        else:
            at += decision.wait_s * 1000
    assert granted_in_first_second == 10  # the rate, in any half-open second


def test_a_caller_late_by_less_than_the_tolerance_keeps_the_grid(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(requests_per_s=10))  # tolerance: one interval, 100 ms
    key.grant(0)  # next slot at 200, open from 100
    key.grant(250)  # 50 ms late: it takes its slot now...
    key.grant(250)  # ...and the call queued behind it catches up
    assert key.acquire(250)[0].wait_s == pytest.approx(0.1)
    key.grant(1000)  # after a silence the grid starts again, with no burst
    assert key.acquire(1000)[0].wait_s == pytest.approx(0.1)


def test_at_high_rates_calls_may_come_early_s_before_their_slot(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(requests_per_s=1000))  # 1 ms apart
    key.grant(0)
    assert not key.acquire(0)[0].granted  # from idle, one call: the grid opens early_s ahead
    granted = 0
    while key.acquire(40)[0].granted:  # 9 ms late for the slot at 31: caught up, 30 ms may come early
        granted += 1
    assert granted == 1 + round(EARLY_S * 1000)  # its own slot and the 30 that may come early


def test_a_concurrency_cap_counts_leases_until_released(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(concurrency=2))
    first = key.grant(0)
    key.grant(0)
    refused, _ = key.acquire(1)
    assert not refused.granted and refused.wait_s == pytest.approx(CONCURRENCY_POLL_S)
    key.release(5, *first)
    key.grant(6)


def test_a_lease_that_is_never_released_expires(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(concurrency=1), AdaptivePolicy(lease_ttl_s=2.0))
    key.grant(0)
    assert not key.acquire(1999)[0].granted
    key.grant(2001)


def test_tokens_are_reserved_then_settled(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(tokens_per_s=10))  # 600tok/m: a bucket of 600
    lease, decision = key.grant(0, tokens=500)
    assert decision.reserved_tokens == 500
    refused, _ = key.acquire(0, tokens=200)
    assert refused.wait_s == pytest.approx(10.0)  # 100 left, 100 more at 10 tokens/s
    key.release(0, lease, decision, used=100)  # the call used less: 400 come back
    key.grant(0, tokens=200)


def test_usage_above_the_reservation_is_a_debt_later_calls_wait_out(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(tokens_per_s=10))
    lease, decision = key.grant(0, tokens=100)
    key.release(0, lease, decision, used=700)  # 500 - 600 = -100 in the bucket
    refused, _ = key.acquire(0, tokens=50)
    assert refused.wait_s == pytest.approx(15.0)


def test_a_call_bigger_than_the_bucket_waits_for_a_full_bucket(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(tokens_per_s=10))
    _, decision = key.grant(0, tokens=10_000)
    assert decision.reserved_tokens == 600
    assert key.acquire(0, tokens=1)[0].wait_s == pytest.approx(0.1)


def test_a_429_pauses_the_key_and_halves_its_rate(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(requests_per_s=10))
    lease, decision = key.grant(0)
    key.release(50, lease, decision, status=429, retry_after_s=2.0)
    refused, _ = key.acquire(1050)
    assert refused.wait_s == pytest.approx(1.0)  # the pause lasts Retry-After
    key.grant(2050)
    assert key.acquire(2050)[0].wait_s == pytest.approx(0.2)  # half the rate: 5/s


def test_the_rate_grows_back_linearly_after_the_pause(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(requests_per_s=10))
    lease, decision = key.grant(0)
    key.release(0, lease, decision, status=429)  # factor 0.5, pause 1 s (the cooldown)
    key.grant(6000)  # 5 s after the pause: factor 0.75
    assert key.acquire(6000)[0].wait_s == pytest.approx(0.1 / 0.75)
    key.grant(20_000)  # factor 1 again
    assert key.acquire(20_000)[0].wait_s == pytest.approx(0.1)


def test_a_round_of_429s_cuts_once(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(requests_per_s=10))
    calls = [key.grant(i * 100) for i in range(4)]
    for lease, decision in calls:
        key.release(350, lease, decision, status=429)  # all sent before the first cut
    key.grant(1350)
    assert key.acquire(1350)[0].wait_s == pytest.approx(0.2)  # 5/s, not 10/16


def test_a_429_without_a_declared_cap_caps_calls_in_flight(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit())
    calls = [key.grant(0) for _ in range(8)]
    key.release(10, *calls[0], status=429)  # 8 in flight: the cap becomes 8 × 0.5
    for lease, decision in calls[1:5]:
        key.release(1010, lease, decision)
    assert key.acquire(1011)[0].granted  # 3 in flight
    assert not key.acquire(1012)[0].granted  # 4 in flight: the cap


def test_a_retry_after_on_another_status_pauses_too(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit())
    lease, decision = key.grant(0)
    key.release(0, lease, decision, status=503, retry_after_s=3.0)
    assert key.acquire(2000)[0].wait_s == pytest.approx(1.0)


def test_a_429_streak_marks_the_quota_exhausted_for_a_while(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit())
    for at in (0, 2000, 4000):  # three strikes over at least quota_streak_s
        lease, decision = key.grant(at)
        key.release(at, lease, decision, status=429)
    assert key.acquire(4500)[0].quota
    assert key.acquire(4000 + 5001)[0].granted  # the mark lasts quota_hold_s


def test_any_other_answer_ends_a_429_streak(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit())
    for at, status in ((0, 429), (2000, 429), (4000, 200), (6000, 429)):
        lease, decision = key.grant(at)
        key.release(at, lease, decision, status=status)
    assert not key.acquire(8000)[0].quota


def test_nothing_is_taken_when_one_gate_refuses(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(requests_per_s=10, concurrency=1))
    first = key.grant(0)  # the next request slot opens at 100
    assert not key.acquire(100)[0].granted  # the concurrency gate refused: no request slot is spent
    assert not key.acquire(100)[0].granted
    key.release(150, *first)
    key.grant(150)  # the slot the refused calls did not take
    assert key.acquire(150)[0].wait_s == pytest.approx(0.05)  # and the one after it opens at 200


@pytest.mark.redis
def test_a_key_with_credentials_never_reaches_a_redis_key_name(redis_server: str, redis_client: Any) -> None:
    backend = RedisRateBackend(redis_server)
    key = "https://user:sk-live-secret@api.example.com/v1/agent"

    async def call() -> None:
        decision = await backend.try_acquire(key, RateLimit(requests_per_s=1, concurrency=1), POLICY, tokens=0,
                                             lease_id="l1")
        assert decision.granted
        await backend.aclose()

    asyncio.run(call())
    names = redis_client.keys("*")
    assert names and all("secret" not in name and "user" not in name for name in names)
    assert all(name.startswith(("farm:fleet:limit:sha256:", "farm:fleet:leases:sha256:")) for name in names)


FAIR = AdaptivePolicy(lease_ttl_s=60.0, fair=True, ticket_grace_s=1.0)


def _try(key: Key, at_ms: float, lease: str) -> Decision:
    return key.loop.run_until_complete(key.backend.try_acquire(
        key.name, key.limit, key.policy, tokens=0, lease_id=lease, now=T0 + at_ms))


def test_fair_waiters_are_served_first_come_first_served(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(concurrency=1), FAIR)
    held = key.grant(0)
    assert not _try(key, 1, "first").granted and not _try(key, 2, "second").granted  # tickets 1, 2
    key.release(5, *held)
    assert not _try(key, 6, "second").granted  # the slot is free, but "first" waits longer
    assert _try(key, 7, "first").granted
    assert not _try(key, 8, "newcomer").granted  # behind "second" (and the cap)


def test_a_dead_waiter_never_blocks_the_head_of_the_queue(make_key: Callable[..., Key]) -> None:
    key = make_key(RateLimit(concurrency=1), FAIR)
    held = key.grant(0)
    assert not _try(key, 1, "dies").granted  # its ticket lives until its next try is due + 1 s
    key.release(5, *held)
    assert not _try(key, 6, "alive").granted
    assert _try(key, 1100, "alive").granted  # "dies" never came back: its ticket expired
