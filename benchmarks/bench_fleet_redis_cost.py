"""The Redis cost of fleet control per call, counted (not timed): INFO commandstats of a private
redis-server before and after N calls through ``FleetLimiter`` with a shared limit, a shared
budget, both, and neither (SPEC 15; safe to run on a busy machine: it counts commands).

    python3 benchmarks/bench_fleet_redis_cost.py [--calls 200]

Prints, per setting, the commands and round trips (EVALSHA counts one; a script's inner calls
are listed apart as Redis counts them) per call.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis

from farm.distributed.fleet.budget import RedisBudgetBackend
from farm.distributed.fleet.client import LoopClients
from farm.distributed.fleet.rates import RedisRateBackend
from farm.fleet.budget import Budget
from farm.fleet.control import FleetLimiter, FleetScope, Refusal, UsageMeter, fleet_scope
from farm.fleet.limiter import RateLimiter
from farm.fleet.ratestate import AdaptivePolicy
from farm.plan.fleet import BudgetLimit
from farm.plan.rate_specs import LimitTable, parse_limit
from farm.stats.prices import Price

USAGE = {"prompt_tokens": 10, "completion_tokens": 5}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _commands(client: Any) -> dict[str, int]:
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


async def _calls(n: int, url: str, *, limited: bool, budgeted: bool) -> None:
    clients = LoopClients(url)
    table = LimitTable({"*": parse_limit("100000/s,8conc", where="bench")} if limited else {})
    policy = AdaptivePolicy(fair=True)  # as a sweep runs it (farm.fleet.runtime)
    rates = RateLimiter(RedisRateBackend(url, clients=clients), table, policy) if limited else None
    limiter = FleetLimiter(rates, lambda key: Price(1.0, 1.0))
    budget = Budget(RedisBudgetBackend(url, clients=clients), "bench", BudgetLimit(max_usd=1e9)) if budgeted else None
    with fleet_scope(FleetScope(budget, UsageMeter(), Refusal())):
        for _ in range(n):
            lease = await limiter.acquire("local.llm", tokens=100)
            await lease.release(status=200, retry_after_s=None, usage=USAGE)
    await clients.aclose()


def _measure(url: str, n: int, **setting: bool) -> dict[str, float]:
    client = redis.Redis.from_url(url, decode_responses=True)
    client.config_resetstat()
    asyncio.run(_calls(n, url, **setting))
    counted = _commands(client)
    counted.pop("config|resetstat", None)
    counted.pop("info", None)
    client.close()
    return {name: calls / n for name, calls in sorted(counted.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed")
    port, directory = _free_port(), tempfile.mkdtemp(prefix="bench-redis-")
    server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", directory],
                              stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        _wait(lambda: redis.Redis.from_url(url).ping())
        for name, setting in (("neither", {"limited": False, "budgeted": False}),
                              ("rate limit", {"limited": True, "budgeted": False}),
                              ("budget", {"limited": False, "budgeted": True}),
                              ("both", {"limited": True, "budgeted": True})):
            per_call = _measure(url, args.calls, **setting)
            trips = sum(v for k, v in per_call.items() if k in ("evalsha", "eval", "hgetall", "script|load"))
            shown = ", ".join(f"{k} {v:.2f}" for k, v in per_call.items() if v)
            print(f"{name:>10}: {trips:.2f} round trips a call ({shown})")
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)


def _wait(ready: Callable[[], Awaitable[Any] | Any], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            ready()
            return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


if __name__ == "__main__":
    main()
