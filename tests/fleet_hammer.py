"""One process of a fleet hammering one rate-limited key (run by tests/test_fleet_hammer.py).

    python tests/fleet_hammer.py STORE_URL TARGET_URL LIMIT SECONDS [--callers N] [--recovery R]

Prints ``ready``, waits for ``go`` on stdin, then runs N callers for SECONDS: each acquires the
key ``hammer`` from the Redis limiter, POSTs to TARGET_URL, and releases with the status and
``Retry-After`` it got. Prints a JSON summary line at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter

import aiohttp

from farm.agents.retry import parse_retry_after
from farm.fleet.limiter import RateLimiter
from farm.fleet.ratestate import AdaptivePolicy
from farm.fleet.redis_rates import RedisRateBackend
from farm.fleet.specs import LimitTable, parse_limit

KEY = "hammer"


async def caller(limiter: RateLimiter, session: aiohttp.ClientSession, url: str, until: float,
                 statuses: Counter[int]) -> None:
    while time.monotonic() < until:
        lease = await limiter.acquire(KEY)
        status, retry_after = None, None
        try:
            async with session.post(url, json={"q": 1}) as response:
                await response.read()
                status, retry_after = response.status, parse_retry_after(response.headers.get("Retry-After"))
        finally:
            await lease.release(status=status, retry_after_s=retry_after, usage=None)
        statuses[status or 0] += 1


async def main(args: argparse.Namespace) -> dict[str, object]:
    policy = AdaptivePolicy(recovery_per_s=args.recovery)
    table = LimitTable({KEY: parse_limit(args.limit, where="hammer")})
    limiter = RateLimiter(RedisRateBackend(args.store), table, policy)
    statuses: Counter[int] = Counter()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.callers)) as session:
        warm_up = await limiter.acquire("warm-up")  # connect to Redis before the start
        await warm_up.release(status=None, retry_after_s=None, usage=None)
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        until = time.monotonic() + args.seconds
        await asyncio.gather(*(caller(limiter, session, args.target, until, statuses) for _ in range(args.callers)))
    await limiter.aclose()
    return {"statuses": {str(k): v for k, v in statuses.items()}}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("target")
    parser.add_argument("limit")
    parser.add_argument("seconds", type=float)
    parser.add_argument("--callers", type=int, default=16)
    parser.add_argument("--recovery", type=float, default=0.05)
    print(json.dumps(asyncio.run(main(parser.parse_args()))), flush=True)
