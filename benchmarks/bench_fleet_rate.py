"""How close three workers come to a shared rate limit, and how fast they recover from 429s.

The figures that ``tests/fleet/test_fleet_distributed.py`` no longer asserts (a throughput floor is a
benchmark's, not a test's): three ``farm worker`` processes × 16 threads share ``--rate-limit
'*=100/s'`` against an HTTP agent that counts arrivals; then the agent answers 429 +
``Retry-After: 1`` beyond 40 a second for 4 s; then the limit is lifted and the fleet grows back.

    python benchmarks/bench_fleet_rate.py [--json FILE]
"""

from __future__ import annotations

import json
import time
from typing import Any

import cluster
import harness

from tests.support.fleet_helpers import CountingServer, counting_server

LIMIT = 100
WORKERS = 3


def phases(server: CountingServer, started: float) -> dict[str, Any]:
    """Calls a second while steady, while throttled, and in the 20 s after the 429s stop."""
    time.sleep(8)
    steady = server.per_second(started + 2, started + 8)
    server.capacity = 40
    throttled_from = time.time()
    time.sleep(4)
    server.capacity = None
    recovered_from = time.time()
    time.sleep(20)
    return {"steady": steady, "throttled": server.per_second(throttled_from, recovered_from),
            "after": server.per_second(recovered_from, time.time()),
            "share_429": server.count(throttled_from, recovered_from, status=429)
            / max(1, server.count(throttled_from, recovered_from))}


def main() -> None:
    args = harness.parser(__doc__ or "").parse_args()
    harness.sigterm_as_interrupt()
    with harness.workdir("bench-fleet-rate-") as work, harness.Processes(work) as procs:
        broker = harness.start_redis(procs)
        names = [f"rate{i}" for i in range(WORKERS)]
        for name in names:
            cluster.farm_worker(procs, broker, name, "-Q", "fleet-rate", "-c", "16", "--processes", "1")
        cluster.wait_workers(broker, names)
        suite = work / "s.jsonl"
        suite.write_text("".join(json.dumps({"id": f"c{i}", "input": "go"}) + "\n" for i in range(20)))
        with counting_server() as (served, server):
            harness.measure([*harness.FARM, "test", "-i", str(suite), "-n", served.url + "/agent", "--runs", "500",
                             "--rate-limit", f"*={LIMIT}/s", "--broker", broker, "--queue", "fleet-rate",
                             "--detach", "--no-history"])
            figures = phases(server, time.time())
    rows = [[name, harness.num(harness.median(v)), harness.num(max(v))]
            for name, v in figures.items() if isinstance(v, list) and v]
    print(harness.table(["phase", "median calls/s", "max calls/s"], rows))
    print(f"429 share while throttled: {figures['share_429']:.2f}")
    harness.emit("fleet_rate", figures, args.json_path)


if __name__ == "__main__":
    main()
