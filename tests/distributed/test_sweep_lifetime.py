"""A sweep's keys live while it is in flight, whatever FARM_RESULT_TTL says (issue 37, item 6;
SPEC 26): real redis-server, real ``farm worker`` processes, a counting agent.

A sweep that lasted longer than FARM_RESULT_TTL lost its plan half-way and the submitter said
"the workers keep delivering it; farm results re-attaches", which was false. Now the reconcilers
(every worker's, and the attached submitter's) give a sweep in flight a full TTL again once half
of it has run down; a sweep whose keys are gone all the same (flushed, a Redis restart without
persistence) is said to be lost.
"""

from __future__ import annotations

import json

import pytest
import redis

from farm.distributed.store import keys
from tests.support.distributed_sweeps import write_suite
from tests.support.fleet_agents import write_py_agent
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def test_a_sweep_that_outlives_the_result_ttl_completes_with_every_run_once(tmp_path, redis_client, farm_worker,
                                                                            farm_cli, counting_agent):
    # 40 runs of 1 s on 2 threads: at least 20 s, more than twice FARM_RESULT_TTL; no reconcile
    # interval given: the default must keep up with a short TTL on its own (8 s, not less: the read
    # back below starts a process that imports Celery, which a busy machine makes slow)
    env = {"FARM_RESULT_TTL": "8", "FARM_STALL_TIMEOUT": "60"}
    agent = counting_agent(delay_s=1.0)
    suite = write_suite(tmp_path / "long.jsonl", [{"id": f"L{i}", "input": "x"} for i in range(4)])
    farm_worker(queue="long", concurrency=2, env=env)
    out = tmp_path / "long.json"
    done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "10", "--queue", "long", "--no-progress",
                        "--no-history", "-o", str(out), env=env, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(out.read_text())
    assert report["metadata"]["status"] == "complete", report["metadata"]
    assert report["summary"]["total_runs"] == 40
    agent.assert_once_each(40)  # no run lost, none made twice
    # and read back later, as `farm results` does, within the TTL after the end
    again = farm_cli.run("results", report["metadata"]["sweep_id"], "-o", str(tmp_path / "again.json"), env=env)
    assert again.returncode in (0, 1), again.stderr
    assert json.loads((tmp_path / "again.json").read_text())["summary"]["total_runs"] == 40


def test_a_sweep_whose_keys_are_gone_is_said_to_be_lost_not_still_delivered(tmp_path, redis_client, farm_worker,
                                                                             farm_cli):
    env = {"FARM_STALL_TIMEOUT": "20", "FARM_NO_WORKER_TIMEOUT": "600"}
    agent, _calls = write_py_agent(tmp_path, delay_s=0.5)
    suite = write_suite(tmp_path / "gone.jsonl", [{"id": f"G{i}", "input": "x"} for i in range(4)])
    farm_worker(queue="gone", concurrency=2, env=env)
    submitter = farm_cli.popen("test", "-i", str(suite), "-n", agent, "--runs", "50", "--queue", "gone",
                               "--no-progress", "--no-history", env=env)
    try:
        wait_for(lambda: bool(redis_client.zrange(keys.SWEEPS_IN_FLIGHT, 0, -1)), 120, "the sweep to be submitted")
        (sweep_id,) = redis_client.zrange(keys.SWEEPS_IN_FLIGHT, 0, -1)
        wait_for(lambda: int(redis_client.get(keys.settled_count_key(sweep_id)) or 0) >= 2, 120,
                 "the sweep to be under way")
        # what an expired TTL (or a flush, a restart without persistence) leaves: none of its keys
        client = redis.Redis.from_url(farm_cli.broker, decode_responses=True)
        gone = list(client.scan_iter(f"{keys.sweep_key(sweep_id)}*", count=1000))
        client.delete(*gone)
        _out, err = submitter.communicate(timeout=180)
    finally:
        if submitter.poll() is None:
            submitter.kill()
            submitter.wait()
    assert submitter.returncode == 3, err
    assert "keep delivering" not in err, err
    assert f"sweep {sweep_id} is gone" in err and "submit it again" in err, err


def test_reconcile_passes_come_four_times_a_ttl_at_least() -> None:
    from farm.distributed.delivery.config import Delivery, reconcile_interval

    assert reconcile_interval({}, visibility_timeout_s=360, result_ttl_s=8) == 2
    assert reconcile_interval({"FARM_RECONCILE_INTERVAL": "30"}, visibility_timeout_s=360, result_ttl_s=20) == 5
    assert Delivery.from_env(360, 60, {}, result_ttl_s=604800).interval_s == 30
    assert Delivery.from_env(360, 60, {}, result_ttl_s=12).interval_s == 3
