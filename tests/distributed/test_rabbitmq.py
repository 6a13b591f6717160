"""RabbitMQ as the broker (SPEC 11), Redis still the farm's store: real RabbitMQ, real workers.

Each test gets a vhost of its own on the RabbitMQ server at 127.0.0.1:5672 (``rabbitmqctl``),
deleted after it; the sweep data lives in the session's private Redis (``FARM_STORE_URL``).
The same parity and SIGKILL checks as on Redis: the sweep's report equals the in-process one,
and a busy worker killed mid-sweep loses no run and counts none twice.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.support.broker_servers import rabbitmq_vhost, rabbitmqctl
from tests.support.distributed_sweeps import AGENTS, PARITY_CASES, assert_parity, write_suite
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.redis, pytest.mark.slow]


@pytest.fixture
def amqp_url() -> Iterator[str]:
    with rabbitmq_vhost() as url:
        yield url


def _calls(path: Path) -> Counter[tuple[str, int]]:
    if not path.exists():
        return Counter()
    return Counter((case, int(run)) for case, run in (line.split() for line in path.read_text().splitlines()
                                                      if line.strip()))


def test_sweep_over_rabbitmq_matches_in_process(tmp_path, redis_client, redis_server, amqp_url, farm_worker,
                                                farm_cli, counting_agent):
    store = {"FARM_STORE_URL": redis_server}
    suite = write_suite(tmp_path / "parity.jsonl", PARITY_CASES)
    worker = farm_worker(broker=amqp_url, queue="parity", env=store)
    assert "Connected to amqp://" in worker.text()
    agent = counting_agent()  # one agent for both sweeps: the reports name it alike
    common = ["test", "-i", str(suite), "-n", agent.ref, "--runs", "6", "--no-progress"]
    local = farm_cli.run(*common, "-o", str(tmp_path / "local.json"), "--parallel", "4", local=True)
    agent.assert_once_each(18)
    agent.clear()
    remote = farm_cli.run(*common, "-o", str(tmp_path / "remote.json"), "--broker", amqp_url, "--queue", "parity",
                          env=store)
    assert local.returncode == remote.returncode == 1, remote.stderr
    agent.assert_once_each(18)  # 3 cases of 6 runs, each called once over RabbitMQ too
    assert "amqp://guest:***@" in remote.stderr  # the sweep's line names the broker, without its password
    remote_report = assert_parity(tmp_path / "local.json", tmp_path / "remote.json")
    # The sweep's data is in the store (Redis), not in RabbitMQ.
    sweep_id = remote_report["metadata"]["sweep_id"]
    assert redis_client.exists(f"farm:sweep:{sweep_id}:events")


def test_sigkilled_worker_on_rabbitmq_loses_no_run_and_counts_each_once(tmp_path, redis_client, redis_server,
                                                                        amqp_url, farm_worker, farm_cli):
    calls = tmp_path / "calls"
    env = {"FARM_STORE_URL": redis_server, "FARM_TEST_SLEEP": "1.5", "FARM_TEST_CALLS": str(calls)}
    cases, runs = 4, 5
    suite = write_suite(tmp_path / "k.jsonl", [{"id": f"k{i}", "input": "x"} for i in range(cases)])
    submitted = farm_cli.run("test", "-i", str(suite), "-n", f"{AGENTS}:slow", "--runs", str(runs), "--queue",
                             "kill", "--detach", "--broker", amqp_url, env=env)
    assert submitted.returncode == 0, submitted.stderr
    sweep_id = submitted.stdout.strip()
    doomed = farm_worker(broker=amqp_url, queue="kill", concurrency=4, env=env)
    wait_for(lambda: sum(_calls(calls).values()) >= 6, 90, "the first worker to be mid-run")
    doomed.kill()
    in_flight = {run for run, n in _calls(calls).items() if n == 1}
    farm_worker(broker=amqp_url, queue="kill", concurrency=4, env=env)
    out = tmp_path / "k.json"
    done = farm_cli.run("results", sweep_id, "-o", str(out), "--broker", amqp_url, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    for case in report["results"]:
        assert case["runs"] == case["passed"] == runs
        assert sorted(d["run"] for d in case["run_details"]) == list(range(1, runs + 1))
    assert report["summary"]["total_runs"] == cases * runs
    seen = _calls(calls)
    assert set(seen) == {(f"k{i}", n) for i in range(cases) for n in range(1, runs + 1)}
    # RabbitMQ gave the killed worker's unacknowledged runs to the new one, yet each counted once.
    assert any(seen[run] >= 2 for run in in_flight), (in_flight, seen)


def _connections(vhost: str) -> set[str]:
    listed = rabbitmqctl("list_connections", "-q", "--no-table-headers", "-p", vhost, "pid")
    assert listed.returncode == 0, listed.stderr
    return {line.strip() for line in listed.stdout.splitlines() if line.strip()}


def test_a_run_redelivered_while_its_worker_still_runs_it_is_paid_once(tmp_path, redis_client, redis_server,
                                                                       amqp_url, farm_worker, farm_cli):
    """RabbitMQ redelivers a consumer's unacknowledged messages at once when its connection closes,
    whether its process died or only the connection did (a network cut, a missed AMQP heartbeat):
    the copy went to another worker, which ran the run beside its live holder (the agent called
    twice). A copy now waits for the holder's heartbeat to lapse; it did not: the holder stores the
    run and the copy is dropped."""
    calls = tmp_path / "calls"
    env = {"FARM_STORE_URL": redis_server, "FARM_TEST_SLEEP": "8", "FARM_TEST_CALLS": str(calls)}
    suite = write_suite(tmp_path / "c.jsonl", [{"id": "c0", "input": "x"}])
    holder = farm_worker(broker=amqp_url, queue="cut", concurrency=1, env=env)
    submitted = farm_cli.run("test", "-i", str(suite), "-n", f"{AGENTS}:slow", "--runs", "1", "--queue", "cut",
                             "--detach", "--broker", amqp_url, env=env)
    assert submitted.returncode == 0, submitted.stderr
    wait_for(lambda: sum(_calls(calls).values()) >= 1, 90, "the holder to be mid-run")
    vhost = unquote(amqp_url.rsplit("/", 1)[1])
    holders = _connections(vhost)  # the submitter detached: every connection is the holder's
    farm_worker(broker=amqp_url, queue="cut", concurrency=1, env=env)
    for pid in holders:
        closed = rabbitmqctl("close_connection", pid, "cut by the test")
        assert closed.returncode == 0, closed.stderr
    out = tmp_path / "c.json"
    done = farm_cli.run("results", submitted.stdout.strip(), "-o", str(out), "--broker", amqp_url, timeout=180,
                        env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["summary"]["total_runs"] == 1
    assert holder.process.poll() is None  # its process lived on: the run was its to settle
    assert _calls(calls) == Counter({("c0", 1): 1})


def test_status_cancel_and_results_on_rabbitmq(tmp_path, redis_client, redis_server, amqp_url, farm_worker,
                                               farm_cli, counting_agent):
    env = {"FARM_STORE_URL": redis_server, "FARM_BROKER_URL": amqp_url, "FARM_QUEUE": "rq"}
    suite = write_suite(tmp_path / "c.jsonl", [{"id": f"c{i}", "input": "x"} for i in range(3)])
    agent = counting_agent("tests/agents/distributed.py:slow")
    submitted = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "4", "--detach", env=env)
    assert submitted.returncode == 0, submitted.stderr
    sweep_id = submitted.stdout.strip()
    # Nobody consumes FARM_QUEUE=rq yet: the waiting messages are counted by RabbitMQ itself.
    status = farm_cli.run("status", "--json", env=env)
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["queues"]["rq"] == 12 and data["broker"].startswith("amqp://guest:***@")
    assert [s["sweep_id"] for s in data["sweeps"]] == [sweep_id]
    assert "store: redis://" in farm_cli.run("status", env=env).stdout
    cancelled = farm_cli.run("cancel", sweep_id, env=env)
    assert cancelled.returncode == 0 and "cancelled" in cancelled.stdout, cancelled.stderr
    farm_worker(broker=amqp_url, env=env, queue="rq")
    out = tmp_path / "c.json"
    done = farm_cli.run("results", sweep_id, "-o", str(out), timeout=90, env=env)
    assert done.returncode == 3, done.stderr
    report = json.loads(out.read_text())
    assert report["metadata"]["stopped"] == "cancelled" and report["results"] == []
    assert agent.calls == 0  # the agent was never called
    wait_for(lambda: json.loads(farm_cli.run("status", "--json", env=env).stdout)["queues"]["rq"] == 0, 60,
              "the dropped runs to leave the queue")


def test_rabbitmq_without_a_store_is_a_usage_error(tmp_path, farm_cli):
    amqp = "amqp://guest:guest@127.0.0.1:5672/nowhere"  # refused before any connection is made
    suite = write_suite(tmp_path / "s.jsonl", PARITY_CASES[:1])
    for argv in (["test", "-i", str(suite), "-n", f"{AGENTS}:by_run", "--broker", amqp],
                 ["worker", "--broker", amqp], ["status", "--broker", amqp]):
        done = farm_cli.run(*argv, timeout=60)
        assert done.returncode == 2, (argv, done.stderr)
        assert "set FARM_STORE_URL" in done.stderr and "guest:***@" in done.stderr and "guest:guest" not in done.stderr


def test_an_unreachable_rabbitmq_is_a_runtime_error_not_a_traceback(tmp_path, redis_client, redis_server, farm_cli):
    dead = "amqp://guest:guest@127.0.0.1:1/nowhere"  # nothing listens on port 1
    env = {"FARM_STORE_URL": redis_server}
    status = farm_cli.run("status", "--broker", dead, env=env, timeout=120)
    assert status.returncode == 3, status.stderr
    assert "cannot reach the broker at amqp://guest:***@127.0.0.1:1/nowhere" in status.stderr
    assert "Traceback" not in status.stderr
    suite = write_suite(tmp_path / "s.jsonl", PARITY_CASES[:1])
    submit = farm_cli.run("test", "-i", str(suite), "-n", f"{AGENTS}:by_run", "--broker", dead, "--no-progress",
                          env=env, timeout=120)
    # checked before the sweep is announced (no sweep id nor journal for a sweep that never started)
    assert submit.returncode == 3, submit.stderr
    assert "cannot reach the broker at amqp://guest:***@127.0.0.1:1/nowhere" in submit.stderr
    assert "journal" not in submit.stderr
