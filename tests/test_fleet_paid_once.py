"""Nothing is paid twice (issue 37, item 4; SPEC 11/26 amended): a run that waits in the queue or
for a rate-limit slot is not a lost run, so with no fault no run's agent is called twice. Real
redis-server, real ``farm worker`` processes, an HTTP agent that counts its calls.

Before, the reconciler took a run for lost once its sweep had been idle a whole lease
(``FARM_LEASE``) and the run had been neither settled nor begun that long: a run still in the
queue, or begun and waiting for its rate-limit slot, was published again, and both copies called
the agent (the red team: 25-31 of 200 runs paid twice at ``*=8/s,3conc``).
"""

from __future__ import annotations

import pytest

from tests.fleet_agents import usage_server
from tests.fleet_project import report_of, write_suite

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def test_runs_waiting_for_a_slot_or_in_the_queue_past_their_lease_are_called_once(tmp_path, redis_client,
                                                                                  farm_worker, farm_cli) -> None:
    # one call every 3 s, leases of 2 s: between two calls the sweep is idle longer than a lease,
    # with runs begun and waiting for their slot (4 threads) and runs still in the queue
    env = {"FARM_LEASE": "2", "FARM_RECONCILE_INTERVAL": "0.5"}
    workers = [farm_worker(queue="paid", concurrency=4, env=env)]
    suite = write_suite(tmp_path, "w.jsonl", [{"id": "w", "input": "go"}])
    out = tmp_path / "w.json"
    with usage_server() as (served, server):
        done = farm_cli.run("test", "-i", str(suite), "-n", served.url + "/agent", "--runs", "8", "--rate-limit",
                            "*=20/m,1conc", "--broker", farm_cli.broker, "--queue", "paid", "--no-history",
                            "--no-progress", "-o", str(out), env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        report = report_of(out)
        republished = sum(w.text().count("published again") for w in workers)
        assert report["summary"]["total_runs"] == 8
        assert server.calls == 8, f"{server.calls} calls for 8 runs; republished in {republished} passes"
        assert republished == 0, [line for w in workers for line in w.text().splitlines() if "again" in line]
