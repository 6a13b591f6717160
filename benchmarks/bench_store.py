"""Store: Redis commands and Redis CPU per run of a distributed sweep, and the runs/s one Redis core carries.

    python benchmarks/bench_store.py [--cases 100] [--runs 10] [--workers 1] [--repeat 1] [--json F]

One private redis-server, ``farm worker --broker URL`` with its defaults (``--workers`` of them),
a warm-up sweep (one run per case), then ``CONFIG RESETSTAT`` and ``farm test --broker URL`` of
``--cases`` x ``--runs`` against an ``async def`` agent that answers at once. ``INFO commandstats``
and ``INFO cpu`` after the sweep (everything the workers, the submitter and the idle polls sent
while it ran) give commands per run by command, and Redis CPU (``used_cpu_sys`` + ``used_cpu_user``)
per run. The projection is what one Redis core carries: ``SIMPLE_PER_CORE_S`` simple commands a
second divided by commands per run, and 1 / (Redis CPU per run).

The command count is exact on a busy machine; CPU per run is indicative only (the machine is shared).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import cluster
import harness

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.redis_commands import Monitor

AGENT = f"py:{harness.AGENTS}/zero_agent.py:respond_async"
SIMPLE_PER_CORE_S = 100_000
"""Simple commands (GET, SET, INCR) one Redis core answers a second, the usual rule of thumb."""


def commandstats(client: Any, field: str = "calls") -> dict[str, int]:
    """Calls (or ``usec``, time spent) per command since the last ``CONFIG RESETSTAT``
    (``cmdstat_evalsha`` → ``evalsha``; a script's time includes the commands it runs)."""
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value[field]) for name, value in stats.items()}


def redis_cpu_s(client: Any) -> float:
    cpu = client.info("cpu")
    return float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])


@contextmanager
def counted(url: str) -> Iterator[dict[str, Any]]:
    """Commands and Redis CPU between entering and leaving (the stats reset on entry)."""
    import redis

    client = redis.Redis.from_url(url, decode_responses=True)
    found: dict[str, Any] = {}
    try:
        client.config_resetstat()
        cpu0 = redis_cpu_s(client)
        yield found
        cpu1 = redis_cpu_s(client)
        calls = commandstats(client)
        usec = commandstats(client, "usec")
        # this script's own INFO/CONFIG calls are not the sweep's
        for own in ("info", "config|resetstat", "config"):
            calls.pop(own, None)
            usec.pop(own, None)
        found.update(calls=calls, usec=usec, cpu_s=cpu1 - cpu0)
    finally:
        client.close()


def one_sweep(url: str, cases: int, runs: int, workers: int) -> dict[str, Any]:
    with harness.workdir("store") as tmp, harness.Processes(tmp) as procs:
        suite = harness.write_suite(tmp / "suite.jsonl", cases)
        out = tmp / "out.jsonl"
        names = [f"store{n}" for n in range(workers)]
        for name in names:
            cluster.farm_worker(procs, url, name)
        cluster.wait_workers(url, names)
        cluster.warm_up(suite, AGENT, out, url)
        time.sleep(1.0)  # the warm-up's tail (its report, acks) out of the count
        with counted(url) as found:
            sweep = cluster.farm_sweep(suite, AGENT, runs, out, broker=url)
        found["runs"] = sweep.runs
        found["statuses"] = sweep.statuses
        monitor = Monitor(url)  # a second sweep, watched: MONITOR costs Redis CPU, so apart
        try:
            again = cluster.farm_sweep(suite, AGENT, runs, out, broker=url)
        finally:
            monitor.stop()
        found.update(sent={k: v / again.runs for k, v in monitor.sent.items()},
                     in_lua={k: v / again.runs for k, v in monitor.in_lua.items()},
                     where={k: v / again.runs for k, v in monitor.keys.most_common(40)})
        return found


def _rows(counts: dict[str, float]) -> list[list[str]]:
    return [[name, f"{v:.2f}"] for name, v in sorted(counts.items(), key=lambda r: -r[1]) if v >= 0.005]


def main() -> None:
    p = harness.parser(__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=100)
    p.add_argument("--runs", type=int, default=10, help="runs per case")
    p.add_argument("--workers", type=int, default=1, help="farm workers (each with its defaults)")
    p.set_defaults(repeat=1)
    args = p.parse_args()
    harness.sigterm_as_interrupt()
    sweeps = []
    with harness.workdir("store-redis") as tmp, harness.Processes(tmp) as procs:
        url = harness.start_redis(procs)
        for _ in range(args.repeat):
            sweeps.append(one_sweep(url, args.cases, args.runs, args.workers))
            harness.flush_redis(url)
    per_run = [sum(s["calls"].values()) / s["runs"] for s in sweeps]
    cpu_us = [s["cpu_s"] / s["runs"] * 1e6 for s in sweeps]
    last = sweeps[-1]
    rows = sorted(((name, n / last["runs"]) for name, n in last["calls"].items()), key=lambda r: -r[1])
    print(f"\nStore: {args.cases} cases x {args.runs} runs, {args.workers} farm worker(s) with defaults "
          f"(last of {args.repeat}: {last['runs']} runs, {last['statuses']})\n")
    print(harness.table(["command", "per run"], [[name, f"{v:.2f}"] for name, v in rows]))
    sent = sum(last["sent"].values())
    print(f"\nSent by clients (MONITOR, a second sweep): {sent:.2f} per run; run inside scripts: "
          f"{sum(last['in_lua'].values()):.2f} per run\n")
    print(harness.table(["sent command", "per run"], _rows(last["sent"])))
    print()
    print(harness.table(["run inside scripts", "per run"], _rows(last["in_lua"])))
    print("\nWhere they go (command, first key with ids blanked)\n")
    print(harness.table(["sent to", "per run"], _rows(last["where"])))
    print(f"\ncommands per run (commandstats, scripts' own included): {harness.spread(per_run)}; one Redis core "
          f"at {SIMPLE_PER_CORE_S:,} simple commands/s carries ~{SIMPLE_PER_CORE_S / harness.median(per_run):,.0f} "
          "runs/s")
    spent = {name: us / last["runs"] for name, us in last["usec"].items()}
    print("\nRedis time in commands, µs a run (commandstats usec; a script's includes the commands it ran)\n")
    print(harness.table(["command", "µs per run"], _rows(spent)))
    print(f"\nRedis CPU per run: {harness.spread(cpu_us)} µs (indicative on a shared machine); "
          f"~{1e6 / harness.median(cpu_us):,.0f} runs/s per Redis core")
    harness.emit("store", {"commands_per_run": per_run, "sent_per_run": sent, "sent": last["sent"],
                           "in_lua": last["in_lua"], "where": last["where"], "redis_cpu_us_per_run": cpu_us,
                           "by_command": dict(rows), "usec_per_run": spent, "runs": last["runs"], "cases": args.cases,
                           "workers": args.workers}, args.json_path)


if __name__ == "__main__":
    main()
