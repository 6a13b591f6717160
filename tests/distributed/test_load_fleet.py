"""Load on a fleet (SPEC 25): a run's ``in_flight`` counts the sweep's runs in flight on every
worker (the store's running runs, read in the step that begins the run), on real ``farm worker``
processes over the private Redis."""

from __future__ import annotations

import json

import pytest

from tests.support.fleet_project import write_suite

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def test_in_flight_counts_the_runs_of_every_worker(tmp_path, redis_client, farm_worker, farm_cli,
                                                   counting_agent) -> None:
    for _ in range(2):
        farm_worker(queue="load-fleet", concurrency=4)
    agent = counting_agent(delay_s=0.5)
    suite = write_suite(tmp_path, "s.jsonl", [{"id": "c1", "input": "go"}, {"id": "c2", "input": "go"}])
    out, stream = tmp_path / "report.json", tmp_path / "runs.jsonl"
    done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "12", "--broker", farm_cli.broker,
                        "--queue", "load-fleet", "--no-history", "--no-progress", "-o", str(out), "-o", str(stream),
                        timeout=240)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    report = json.loads(out.read_text())
    details = [d for case in report["results"] for d in case["run_details"]]
    assert len(details) == 24 and all(1 <= d["in_flight"] <= 8 for d in details)
    assert max(d["in_flight"] for d in details) > 4  # more than one worker's 4 threads: fleet-wide
    lines = [json.loads(line) for line in stream.read_text().splitlines()]
    assert sorted(e["in_flight"] for e in lines if e.get("type") == "result") == sorted(d["in_flight"] for d in details)
    counted = sum(c["runs"] for case in report["results"] for c in case["load_bias"]["in_flight"])
    assert counted == 24
    agent.assert_once_each(24)
