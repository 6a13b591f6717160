"""Workers for one sweep (SPEC 24, issue 43 item 2): ``farm test --detach --own-queue`` publishes a
sweep on its own queue, ``farm worker --sweep ID`` consumes that queue only, and
``--exit-when-idle SECONDS`` ends such a worker by itself, exit 0. Real redis-server, real
``farm worker`` subprocesses, the counting ``py:`` agent (``counting_agent``: calls per (case, run)).
Deadlines are generous and never asserted as limits.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from farm.distributed.store.sweep_store import SweepStore, connect
from farm.settings import sweep_queue
from tests.support.distributed_sweeps import write_suite
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.redis, pytest.mark.slow]

LEASES = {"FARM_VISIBILITY_TIMEOUT": "4", "FARM_LEASE": "6", "FARM_RECONCILE_INTERVAL": "1",
          "FARM_PUBLISHER_LEASE": "2"}
"""Short leases: a SIGKILLed worker's runs come back in seconds (as tests/distributed/test_delivery.py)."""
EXIT_TIMEOUT_S = 240.0


def _submit(farm_cli: Any, suite: Path, agent: str, runs: int, env: dict[str, str] | None = None) -> str:
    done = farm_cli.run("test", "-i", str(suite), "-n", agent, "--runs", str(runs), "--detach", "--own-queue",
                        "--no-history", "--broker", farm_cli.broker, env=env)
    assert done.returncode == 0, done.stderr
    sweep_id = done.stdout.strip()
    assert f"farm worker --sweep {sweep_id}" in done.stderr  # the submitter says what works on it
    return str(sweep_id)


def _results(farm_cli: Any, sweep_id: str, out: Path) -> dict[str, Any]:
    done = farm_cli.run("results", sweep_id, "-o", str(out), "--no-progress", timeout=EXIT_TIMEOUT_S)
    assert done.returncode in (0, 1), done.stderr
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return report


def _assert_exactly_once(report: dict[str, Any], cases: int, runs: int) -> None:
    assert report["metadata"]["status"] == "complete", report["metadata"]
    assert report["summary"]["total_runs"] == cases * runs
    for case in report["results"]:
        assert Counter(d["run"] for d in case["run_details"]) == Counter(range(1, runs + 1)), case["id"]


def _exit_code(worker: Any) -> int:
    try:
        return int(worker.process.wait(timeout=EXIT_TIMEOUT_S))
    except Exception:
        raise AssertionError(f"worker {worker.name} did not exit by itself:\n{worker.text()[-3000:]}") from None


def _cases(n: int) -> list[dict[str, Any]]:
    return [{"id": f"c{i}", "input": "x"} for i in range(n)]


@pytest.mark.parametrize("supervised", [False, True], ids=["one-process", "supervised-2"])
def test_a_worker_for_one_sweep_exits_0_by_itself_once_the_sweep_is_done(tmp_path, redis_client, farm_worker,
                                                                         farm_cli, supervised, counting_agent):
    agent = counting_agent(delay_s=0.05)
    sweep_id = _submit(farm_cli, write_suite(tmp_path / "s.jsonl", _cases(3)), agent.ref, 4)
    assert redis_client.llen(sweep_queue(sweep_id)) > 0  # published on its own queue
    assert redis_client.llen("farm") == 0  # not on the shared one
    processes = ["--processes", "2"] if supervised else []
    worker = farm_worker("--sweep", sweep_id, "--exit-when-idle", "3", *processes, queue=None, supervised=supervised)
    assert _exit_code(worker) == 0, worker.text()[-3000:]
    assert "this worker stops" in worker.text()
    assert redis_client.keys(f"*{sweep_queue(sweep_id)}*") == []  # its queue and kombu's bindings of it: gone
    report = _results(farm_cli, sweep_id, tmp_path / "r.json")
    _assert_exactly_once(report, 3, 4)
    agent.assert_once_each(12)  # one call a run


def test_a_worker_for_sweep_a_never_takes_sweep_bs_runs(tmp_path, redis_client, farm_worker, farm_cli,
                                                        counting_agent):
    agent_a, agent_b = counting_agent(), counting_agent()
    sweep_a = _submit(farm_cli, write_suite(tmp_path / "a.jsonl", _cases(2)), agent_a.ref, 5)
    sweep_b = _submit(farm_cli, write_suite(tmp_path / "b.jsonl", _cases(2)), agent_b.ref, 5)
    store = SweepStore(connect(farm_cli.broker))
    worker_a = farm_worker("--sweep", sweep_a, "--exit-when-idle", "3", queue=None)
    assert _exit_code(worker_a) == 0, worker_a.text()[-3000:]
    assert store.get_report(sweep_a) is not None
    agent_a.assert_once_each(10)
    assert agent_b.calls == 0  # B's runs were neither run nor taken and put back
    assert store.runs_done(sweep_b) == 0
    assert redis_client.llen(sweep_queue(sweep_b)) == 10
    assert sweep_b not in worker_a.text()
    worker_b = farm_worker("--sweep", sweep_b, "--exit-when-idle", "3", queue=None)
    assert _exit_code(worker_b) == 0, worker_b.text()[-3000:]
    _assert_exactly_once(_results(farm_cli, sweep_b, tmp_path / "b.json"), 2, 5)
    agent_b.assert_once_each(10)


def test_sigkill_of_one_of_three_workers_for_a_sweep_loses_nothing(tmp_path, redis_client, farm_worker, farm_cli,
                                                                   counting_agent):
    agent = counting_agent(delay_s=0.3, faults=True)  # a run in flight on the killed worker is called again
    cases, runs = 6, 30
    sweep_id = _submit(farm_cli, write_suite(tmp_path / "k.jsonl", _cases(cases)), agent.ref, runs, env=LEASES)
    store = SweepStore(connect(farm_cli.broker))
    # started together, then awaited: one started and awaited at a time, the first could finish the
    # sweep on a busy machine before the third was up (seen: "the sweep ended before the kill")
    workers = [farm_worker("--sweep", sweep_id, "--exit-when-idle", "5", queue=None, concurrency=4, env=LEASES,
                           wait=False) for _ in range(3)]
    for worker in workers:
        worker.wait_ready()
    wait_for(lambda: store.runs_done(sweep_id) >= 10, EXIT_TIMEOUT_S, "the sweep to be under way")
    victim = workers[0]
    assert victim.process.poll() is None, "the sweep ended before the kill: make it longer"
    victim.kill()
    killed_at = store.runs_done(sweep_id)
    assert killed_at < cases * runs, "the sweep ended before the kill: make it longer"
    for survivor in workers[1:]:
        assert _exit_code(survivor) == 0, survivor.text()[-3000:]
    report = _results(farm_cli, sweep_id, tmp_path / "k.json")
    _assert_exactly_once(report, cases, runs)
    # every run counted once; the killed worker's runs in flight were called again elsewhere
    assert cases * runs <= agent.calls <= cases * runs + 4
    assert set(agent.counts()) == {(f"c{i}", n) for i in range(cases) for n in range(1, runs + 1)}
    assert max(agent.counts().values()) <= 2  # called again once at most: where the kill caught it


@pytest.mark.parametrize("args", [
    ("test", "-m", "hi", "-n", "py:x.py:f", "--own-queue"),  # no broker: no queue to own
    ("test", "-m", "hi", "-n", "py:x.py:f", "--own-queue", "--queue", "other", "--broker", "redis://h:1/0"),
    ("worker", "--exit-when-idle", "3"),  # a shared queue is never idle for good
    ("worker", "--sweep", "a,b"),  # not a sweep id: it would be two queues
    ("worker", "--sweep", "20261122T101500-3f2a9c", "-Q", "other"),
])
def test_sweep_queue_flags_in_contradiction_are_usage_errors(farm_cli, args):
    done = farm_cli.run(*args, local=args[0] == "test")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr


def test_a_sweep_of_its_own_over_rabbitmq(tmp_path, redis_client, redis_server, farm_worker, farm_cli,
                                          counting_agent):
    """The queue name is one RabbitMQ takes, and the finished sweep's queue is deleted there too."""
    import shutil
    import subprocess
    from urllib.parse import unquote, urlsplit

    from tests.support.broker_servers import rabbitmq_vhost

    agent = counting_agent()
    env = {"FARM_STORE_URL": redis_server}
    with rabbitmq_vhost() as amqp_url:
        suite = write_suite(tmp_path / "q.jsonl", _cases(2))
        done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "3",
                            "--detach", "--own-queue", "--no-history", "--broker", amqp_url, env=env)
        assert done.returncode == 0, done.stderr
        sweep_id = done.stdout.strip()
        worker = farm_worker("--sweep", sweep_id, "--exit-when-idle", "3", broker=amqp_url, queue=None, env=env)
        assert _exit_code(worker) == 0, worker.text()[-3000:]
        out = tmp_path / "q.json"
        got = farm_cli.run("results", sweep_id, "-o", str(out), "--no-progress", "--broker", amqp_url, env=env)
        assert got.returncode in (0, 1), got.stderr
        _assert_exactly_once(json.loads(out.read_text(encoding="utf-8")), 2, 3)
        agent.assert_once_each(6)
        vhost = unquote(urlsplit(amqp_url).path.lstrip("/"))
        listed = subprocess.run([shutil.which("rabbitmqctl") or "rabbitmqctl", "list_queues", "-p", vhost, "name"],
                                capture_output=True, text=True, timeout=60, check=True).stdout
        assert sweep_queue(sweep_id) not in listed, listed


def test_a_worker_for_a_sweep_on_the_shared_queue_says_it_takes_none_of_its_runs(tmp_path, redis_client,
                                                                                 farm_worker, farm_cli, counting_agent):
    agent = counting_agent()
    done = farm_cli.run("test", "-i", str(write_suite(tmp_path / "f.jsonl", _cases(2))), "-n", agent.ref, "--runs", "2",
                        "--detach", "--no-history", "--queue", "shared", "--broker", farm_cli.broker)
    assert done.returncode == 0, done.stderr
    sweep_id = done.stdout.strip()
    waiting = redis_client.llen("shared")
    worker = farm_worker("--sweep", sweep_id, "--exit-when-idle", "2", queue=None)
    assert _exit_code(worker) == 0
    assert "the sweep is on queue 'shared', not its own" in worker.text()
    assert redis_client.llen("shared") == waiting and agent.calls == 0
