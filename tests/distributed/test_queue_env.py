"""``FARM_QUEUE`` names the queue everywhere it is documented (SPEC 11, issue 11 finding 8).

``farm worker`` consumes it, ``farm test --broker`` submits to it and ``farm status`` lists it,
each without a flag; a flag still wins over the environment. Real redis-server, real worker.
"""

from __future__ import annotations

import json

import pytest

from tests.support.distributed_sweeps import PARITY_CASES, write_suite

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def test_farm_queue_is_honoured_by_submitter_worker_and_status(tmp_path, redis_client, farm_worker, farm_cli,
                                                               counting_agent):
    env = {"FARM_QUEUE": "from-env"}
    suite = write_suite(tmp_path / "q.jsonl", PARITY_CASES[:2])
    agent = counting_agent()
    submitted = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "3", "--detach", env=env)
    assert submitted.returncode == 0, submitted.stderr
    sweep_id = submitted.stdout.strip()
    assert redis_client.llen("from-env") == 6 and redis_client.llen("farm") == 0
    status = json.loads(farm_cli.run("status", "--json", env=env).stdout)
    assert status["queues"]["from-env"] == 6 and status["sweeps"][0]["queue"] == "from-env"
    worker = farm_worker(queue=None, env=env)  # no -Q: the worker reads FARM_QUEUE
    out = tmp_path / "q.json"
    done = farm_cli.run("results", sweep_id, "-o", str(out), timeout=90, env=env)
    assert done.returncode == 1, done.stderr
    assert json.loads(out.read_text())["summary"]["total_runs"] == 6
    agent.assert_once_each(6)
    workers = json.loads(farm_cli.run("status", "--json", env=env).stdout)["workers"]
    assert [w["queues"] for w in workers if w["name"].startswith(worker.name)] == [["from-env"]]
    # A flag wins over the environment.
    flagged = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "1", "--detach",
                           "--queue", "by-flag", env=env)
    assert flagged.returncode == 0, flagged.stderr
    assert redis_client.llen("by-flag") == 2
