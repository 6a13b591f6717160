"""Several OS processes share one Redis rate limiter against a real HTTP server (SPEC 13).

The server counts arrivals per wall-clock second. The fleet must never exceed the limit by more
than 5 % in any second and must use at least 90 % of it; when the server starts answering 429
with ``Retry-After``, the fleet's rate drops within a second, and recovers once it stops.
"""

from __future__ import annotations

import time

import pytest

from tests.fleet_helpers import Hammers, counting_server

pytestmark = [pytest.mark.redis, pytest.mark.slow]

LIMIT = 100
PROCESSES = 3


def test_three_processes_stay_under_the_shared_limit_and_use_it(redis_server: str, redis_client: object) -> None:
    with counting_server() as (served, server):
        hammers = Hammers(PROCESSES, redis_server, served.url, f"{LIMIT}/s", "8")
        try:
            started = hammers.go()
            results = hammers.results()
        finally:
            hammers.kill()
        seconds = server.per_second(started, started + 8)
    assert len(seconds) >= 6
    assert max(seconds) <= LIMIT * 1.05, seconds
    assert sum(seconds) >= 0.9 * LIMIT * len(seconds), seconds
    assert sum(int(r["statuses"].get("200", 0)) for r in results) >= 0.9 * LIMIT * len(seconds)


def test_a_429_with_retry_after_slows_the_whole_fleet_which_recovers_after(
    redis_server: str, redis_client: object
) -> None:
    with counting_server() as (served, server):
        hammers = Hammers(PROCESSES, redis_server, served.url, f"{LIMIT}/s", "13", "--recovery", "0.25")
        try:
            started = hammers.go()
            time.sleep(3)
            server.capacity = 40  # the provider now allows 40 a second
            time.sleep(4)
            server.capacity = None
            recovered_from = time.time()
            hammers.results()
        finally:
            hammers.kill()
        first_429 = server.first(429)
        assert first_429 is not None
        before = server.per_second(started, first_429)
        just_after = server.count(first_429 + 0.2, first_429 + 1.2)
        throttled = server.count(first_429, recovered_from, status=429)
        throttled_share = throttled / max(1, server.count(first_429, recovered_from))
        after = server.per_second(recovered_from, started + 13)
    assert min(before[1:]) >= 0.9 * LIMIT, before
    assert just_after <= 0.6 * LIMIT, just_after  # the fleet paused and halved its rate within a second
    assert throttled_share < 0.3, throttled_share  # without the fleet's back-off: 60 %
    assert after[-1] >= 0.8 * LIMIT, after  # grown back once the 429s stopped
    assert max(server.per_second(started, started + 13)) <= LIMIT * 1.05
