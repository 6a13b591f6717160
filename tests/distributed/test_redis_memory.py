"""A full Redis (``maxmemory`` + ``noeviction``) kills no worker and leaves no sweep unreported.

Private ``redis-server`` processes (``redis_factory``) and real ``farm worker`` processes: the
sweep is queued, Redis filled to its limit, a worker started (it used to die at once with
"Unrecoverable error: OutOfMemoryError", issue 11 finding 3). It must stay up and wait; the
submitter says "Redis refused writes: OOM" and exits 3; once the limit is raised, the sweep
finishes with every run counted once.
"""

from __future__ import annotations

import json
import time

import pytest
import redis

from tests.support.distributed_sweeps import write_suite
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.redis, pytest.mark.slow]

CRASHY = "py:tests/agents/crashy.py:agent"


def _fill(client: redis.Redis) -> None:
    """Set maxmemory just above what is used now: the next writes are refused."""
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", int(client.info("memory")["used_memory"]) + 1000)


def test_a_full_redis_neither_kills_a_worker_nor_loses_the_sweep(tmp_path, redis_factory, farm_worker, farm_cli):
    server = redis_factory()
    client = redis.Redis.from_url(server.url)
    env = {"FARM_VISIBILITY_TIMEOUT": "10"}
    suite = write_suite(tmp_path / "m.jsonl", [{"id": f"m{i}", "input": "hi"} for i in range(2)])
    submitted = farm_cli.run("test", "-i", str(suite), "-n", CRASHY, "--runs", "10", "--queue", "oom", "--detach",
                             "--broker", server.url, env=env)
    assert submitted.returncode == 0, submitted.stderr
    sweep_id = submitted.stdout.strip()
    _fill(client)
    worker = farm_worker("--no-supervise", broker=server.url, queue="oom", concurrency=4, env=env, wait=False)
    wait_for(lambda: "used memory > 'maxmemory'" in worker.text(), 120,
              "the worker to meet the full Redis")
    time.sleep(3)  # it used to die right there
    assert worker.process.poll() is None, worker.text()[-3000:]
    assert "Unrecoverable error" not in worker.text()
    # the submitter following it says why nothing moves, and leaves the sweep to resume
    follow = farm_cli.run("results", sweep_id, "--broker", server.url, timeout=200, env=env)
    assert follow.returncode == 3, (follow.returncode, follow.stderr)
    assert "Redis refused writes: OOM" in follow.stderr, follow.stderr
    # a new sweep cannot even be stored: the same clear line, exit 3, no traceback
    refused = farm_cli.run("test", "-i", str(suite), "-n", CRASHY, "--queue", "oom", "--broker", server.url,
                           timeout=200, env=env)
    assert refused.returncode == 3, refused.stderr
    assert "Redis refused writes: OOM" in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
    assert worker.process.poll() is None, worker.text()[-3000:]
    client.config_set("maxmemory", 0)  # memory returns: the sweep carries on where it was
    out = tmp_path / "m.json"
    done = farm_cli.run("results", sweep_id, "-o", str(out), "--broker", server.url, timeout=250, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["summary"]["total_runs"] == 20
    assert all(case["runs"] == case["passed"] == 10 for case in report["results"])


def test_runs_refused_storage_mid_sweep_wait_for_memory_and_count_once(tmp_path, redis_factory, farm_worker,
                                                                         farm_cli):
    server = redis_factory()
    client = redis.Redis.from_url(server.url)
    calls = tmp_path / "calls"
    env = {"FARM_VISIBILITY_TIMEOUT": "30", "FARM_TEST_CALLS": str(calls), "FARM_TEST_SLEEP": "3"}
    worker = farm_worker(broker=server.url, queue="oom2", concurrency=4, env=env)
    suite = write_suite(tmp_path / "s.jsonl", [{"id": f"s{i}", "input": "slow"} for i in range(2)])
    submitted = farm_cli.run("test", "-i", str(suite), "-n", CRASHY, "--runs", "2", "--queue", "oom2", "--detach",
                             "--broker", server.url, env=env)
    assert submitted.returncode == 0, submitted.stderr
    wait_for(lambda: calls.exists() and len(calls.read_text().splitlines()) >= 4, 120, "the runs to start")
    _fill(client)  # the runs in flight finish into a full Redis
    wait_for(lambda: "Redis refused writes: OOM" in worker.text(), 120, "a run to meet the full Redis")
    assert worker.process.poll() is None, worker.text()[-3000:]
    client.config_set("maxmemory", 0)
    out = tmp_path / "s.json"
    done = farm_cli.run("results", submitted.stdout.strip(), "-o", str(out), "--broker", server.url, timeout=250,
                        env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["summary"]["total_runs"] == 4
    assert all(case["runs"] == case["passed"] == 2 for case in report["results"])
    assert "starting a new one" not in worker.text()  # waited; never died
