"""Nothing is paid twice (issue 37, item 4; SPEC 11/26 amended): a run that waits in the queue or
for a rate-limit slot is not a lost run, so with no fault no run's agent is called twice. Real
redis-server, real ``farm worker`` processes, an HTTP agent that counts its calls.

Before, the reconciler took a run for lost once its sweep had been idle a whole lease
(``FARM_LEASE``) and the run had been neither settled nor begun that long: a run still in the
queue, or begun and waiting for its rate-limit slot, was published again, and both copies called
the agent (the red team: 25-31 of 200 runs paid twice at ``*=8/s,3conc``).
"""

from __future__ import annotations

import time

import pytest

from farm.distributed.store import keys
from farm.distributed.store.sweep_store import SweepStore, connect
from tests.support.fleet_agents import usage_server
from tests.support.fleet_project import report_of, write_suite
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def test_runs_waiting_for_a_slot_or_in_the_queue_past_their_lease_are_called_once(tmp_path, redis_client,
                                                                                  farm_worker, farm_cli) -> None:
    # one call every 3 s, leases of 2 s: between two calls the sweep is idle longer than a lease,
    # with runs begun and waiting for their slot (6 threads) and runs still in the queue
    env = {"FARM_LEASE": "2", "FARM_RECONCILE_INTERVAL": "0.5"}
    workers = [farm_worker(queue="paid", concurrency=6, env=env)]
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


def test_calls_longer_than_their_slot_spacing_and_a_lease_are_not_called_again(tmp_path, redis_client, farm_worker,
                                                                             farm_cli) -> None:
    """The case where a copy did call the agent on the old code (15 calls for 8 runs): slots every
    0.5 s, calls of 3 s, leases of 2 s, two workers. The runs waiting for their slot were
    published again, and a copy granted its slot while its original was still in its call called
    the agent too (the stored check came before the wait). Above, one call at a time (1conc)
    finished each original before any copy's slot: it caught the republishing, not the calls."""
    env = {"FARM_LEASE": "2", "FARM_RECONCILE_INTERVAL": "0.5"}
    workers = [farm_worker(queue="paid-long", concurrency=6, env=env) for _ in range(2)]
    suite = write_suite(tmp_path, "w.jsonl", [{"id": "w", "input": "go"}])
    out = tmp_path / "w.json"
    with usage_server(delay_s=3.0) as (served, server):
        done = farm_cli.run("test", "-i", str(suite), "-n", served.url + "/agent", "--runs", "8", "--rate-limit",
                            "*=120/m", "--broker", farm_cli.broker, "--queue", "paid-long", "--no-history",
                            "--no-progress", "-o", str(out), env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        republished = sum(w.text().count("published again") for w in workers)
        assert report_of(out)["summary"]["total_runs"] == 8
        assert server.calls == 8, f"{server.calls} calls for 8 runs; republished in {republished} passes"
        assert republished == 0, [line for w in workers for line in w.text().splitlines() if "again" in line]


def test_a_copy_is_a_duplicate_only_while_a_live_workers_run_may_be_in_flight(redis_server, redis_client) -> None:
    """The copy of a run a live worker process holds is dropped (the holder settles it), unless
    the marker is older than the run may stay in flight: then the holder lost it (a requeue after a
    Redis fault), the reconciler published it again, and this copy is the one that runs."""
    store = SweepStore(connect(redis_server))
    redis_client.set(keys.worker_alive_key("alive"), "1")
    assert not store.begin_run("d1", "c", 1, "alive").duplicate
    assert store.begin_run("d1", "c", 1, "other", held_s=60).duplicate
    assert store.begin_run("d1", "c", 1, "other").duplicate  # no horizon given: in flight for ever
    time.sleep(0.3)
    late = store.begin_run("d1", "c", 1, "other", held_s=0.2)
    assert not late.duplicate and late.deaths == 0  # its holder lives: no death counted either


def test_a_second_copy_of_a_run_in_flight_in_the_same_worker_process_is_not_called(tmp_path, redis_server,
                                                                                   redis_client, farm_worker,
                                                                                   farm_cli) -> None:
    """A killed worker's message redelivered and the reconciler's copy of the same run can both
    reach one surviving worker process; its run marker names that process as the holder, so the
    marker cannot tell them apart. Seen as one paid call missing from a report (issue 37 item 5,
    2026-11-28: the second copy called the agent after the report was built)."""
    from celery import Celery

    worker = farm_worker(queue="copies", concurrency=4, env={"FARM_LOG_RUNS": "1"})  # a line as each task ends
    suite = write_suite(tmp_path, "c.jsonl", [{"id": "c", "input": "go"}])
    out = tmp_path / "c.json"
    with usage_server(delay_s=3.0) as (served, server):
        with farm_cli.started("test", "-i", str(suite), "-n", served.url + "/agent", "--runs", "1",
                              "--broker", farm_cli.broker, "--queue", "copies", "--no-history", "--no-progress",
                              "-o", str(out)) as sweep:
            wait_for(lambda: server.in_flight >= 1, 120, "the run's call in flight")
            sweep_id = next(iter(redis_client.scan_iter("farm:sweep:*:running"))).split(":")[2]
            copier = Celery(broker=redis_server)
            copier.send_task("farm.run", args=(sweep_id, "c", 1), kwargs={"again": True}, queue="copies")
            _stdout, stderr = sweep.communicate(timeout=300)
        assert sweep.returncode == 0, stderr
        # the copy's task ended too (the run and its copy: two tasks): a copy that (wrongly) called
        # the agent has called by then, however long a busy machine took to deliver it
        wait_for(lambda: _tasks_ended(worker.text(), "farm.run") >= 2, 120, "the copy's task ended")
        assert report_of(out)["summary"]["total_runs"] == 1
        assert server.calls == 1, f"{server.calls} calls for 1 run"


def _tasks_ended(log: str, task: str) -> int:
    """Tasks of this name a worker's log says ended (Celery's per-task INFO line, ``--log-runs``)."""
    return sum(1 for line in log.splitlines() if f"Task {task}[" in line and " succeeded in " in line)


def test_a_first_delivery_of_a_run_stored_already_does_not_call_the_agent(tmp_path, redis_server, redis_client,
                                                                           farm_worker, farm_cli) -> None:
    """A run can reach a worker twice as a first delivery: two publishers racing at a lease's end,
    or a message a live worker held (prefetched, acks late) past the visibility timeout, restored
    for another and still run by the first. Whichever comes second finds its run stored; it must
    not call the agent (seen under a CPU hog: $0.15 reported for 16 paid calls, 2026-11-28)."""
    from celery import Celery

    worker = farm_worker(queue="first-twice", concurrency=1, env={"FARM_LOG_RUNS": "1"})
    suite = write_suite(tmp_path, "t.jsonl", [{"id": "t", "input": "go"}])
    out = tmp_path / "t.json"
    with usage_server() as (served, server):
        done = farm_cli.run("test", "-i", str(suite), "-n", served.url + "/agent", "--runs", "1", "--broker",
                            farm_cli.broker, "--queue", "first-twice", "--no-history", "--no-progress", "-o",
                            str(out), timeout=300)
        assert done.returncode == 0, done.stderr
        sweep_id = report_of(out)["metadata"]["sweep_id"]
        Celery(broker=redis_server).send_task("farm.run", args=(sweep_id, "t", 1), queue="first-twice")
        wait_for(lambda: _tasks_ended(worker.text(), "farm.run") >= 2, 120, "the second copy's task ended")
        assert server.calls == 1, f"{server.calls} calls for 1 run"
    assert report_of(out)["summary"]["total_runs"] == 1
