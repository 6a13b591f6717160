"""Delivery owned by the farm (SPEC 11, issue 11): real redis-server, real ``farm worker`` processes.

A busy worker SIGKILLed again and again, a submitter SIGKILLed while publishing, timeouts that
detach rather than cancel, ``farm results`` on a stopped sweep: every sweep reaches its report
with every planned run counted exactly once. Leases are shortened (FARM_LEASE, FARM_VISIBILITY_
TIMEOUT, FARM_RECONCILE_INTERVAL, FARM_PUBLISHER_LEASE) so recovery takes seconds; deadlines are
generous and never asserted as limits.
"""

from __future__ import annotations

import base64
import json
import random
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis

from farm.distributed.delivery.reconcile import reconcile_sweep
from farm.distributed.store import keys
from farm.distributed.store.sweep_store import SweepStore, connect
from farm.reports import render_report
from tests.support.distributed_sweeps import AGENTS, write_suite
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.redis, pytest.mark.slow]

LEASES = {"FARM_VISIBILITY_TIMEOUT": "4", "FARM_LEASE": "6", "FARM_RECONCILE_INTERVAL": "1",
          "FARM_PUBLISHER_LEASE": "2"}


def _store(url: str) -> SweepStore:
    return SweepStore(connect(url))


def _submit(farm_cli: Any, suite: Path, runs: int, queue: str, env: dict[str, str], agent: str = "slow") -> str:
    done = farm_cli.run("test", "-i", str(suite), "-n", f"{AGENTS}:{agent}", "--runs", str(runs), "--queue", queue,
                        "--detach", "--broker", farm_cli.broker, env=env)
    assert done.returncode == 0, done.stderr
    return str(done.stdout.strip())


def _report(store: SweepStore, sweep_id: str, timeout: float = 240) -> dict[str, Any]:
    """The report the workers store, with no submitter attached, as its JSON report (run details
    read from the store case by case, as `farm results -o r.json` does)."""
    wait_for(lambda: store.get_report(sweep_id) is not None, timeout, f"sweep {sweep_id}'s report")
    report = store.get_report(sweep_id)
    assert report is not None
    return json.loads(render_report(report, "json"))


def _report_while_progressing(store: SweepStore, sweep_id: str, stall: float = 180) -> dict[str, Any]:
    """``_report`` with a deadline that scales with the sweep: it fails only when no run has settled
    for ``stall`` seconds (a fleet stuck, not a slow machine), however long the whole sweep takes."""
    done, last_change = -1, time.monotonic()
    while store.get_report(sweep_id) is None:
        now_done = store.runs_done(sweep_id)
        if now_done != done:
            done, last_change = now_done, time.monotonic()
        assert time.monotonic() - last_change < stall, f"sweep {sweep_id}: no run settled for {stall:.0f} s at {done}"
        time.sleep(0.5)
    return _report(store, sweep_id, timeout=stall)


def _assert_exactly_once(report: dict[str, Any], cases: int, runs: int) -> None:
    assert report["metadata"]["status"] == "complete", report["metadata"]
    assert report["summary"]["total_runs"] == cases * runs
    assert len(report["results"]) == cases
    for case in report["results"]:
        assert Counter(d["run"] for d in case["run_details"]) == Counter(range(1, runs + 1)), case["id"]


def _republished(workers: list[Any]) -> int:
    return sum(w.text().count("published again") for w in workers)


def test_repeated_sigkills_of_a_busy_worker_lose_no_run_and_count_none_twice(tmp_path, redis_client, farm_worker,
                                                                              farm_cli):
    """Issue 11, finding 1: a SIGKILL between the broker's pop and its unacked record lost a run
    and the sweep never completed. Ten trials, one busy worker killed mid-sweep in each."""
    env = {**LEASES, "FARM_TEST_SLEEP": "0.03"}
    store = _store(farm_cli.broker)
    suite = write_suite(tmp_path / "k.jsonl", [{"id": f"k{i}", "input": "x"} for i in range(10)])
    workers = [farm_worker(queue="kills", concurrency=8, env=env) for _ in range(2)]
    every = list(workers)
    trials = 10
    for trial in range(trials):
        sweep_id = _submit(farm_cli, suite, 20, "kills", env)
        wait_for(lambda: store.runs_done(sweep_id) >= 30, 120,  # noqa: B023
                  f"trial {trial} to be under way")
        victim = workers[trial % 2]
        victim.kill()
        workers[trial % 2] = farm_worker(queue="kills", concurrency=8, env=env, wait=False)
        every.append(workers[trial % 2])
        _assert_exactly_once(_report(store, sweep_id), 10, 20)
        assert store.in_flight_ids() == []
    print(f"{trials} trials, every run counted once; reconciler republished in {_republished(every)} passes")


def test_killing_one_of_three_workers_every_two_seconds_loses_nothing(tmp_path, redis_client, farm_worker,
                                                                      farm_cli):
    env = {**LEASES, "FARM_TEST_SLEEP": "0.15"}
    store = _store(farm_cli.broker)
    suite = write_suite(tmp_path / "c.jsonl", [{"id": f"c{i}", "input": "x"} for i in range(50)])
    workers = [farm_worker(queue="chaos", concurrency=4, env=env) for _ in range(3)]
    every = list(workers)
    sweep_id = _submit(farm_cli, suite, 40, "chaos", env)
    rng, kills = random.Random(11), 0
    while store.get_report(sweep_id) is None:
        time.sleep(2)
        done = store.runs_done(sweep_id)
        if done >= 2000 or kills > 200:
            break  # let the end of the sweep happen without kills (recovery is then the lease)
        index = rng.randrange(3)
        # The pace scales with the machine: only a worker that came up is killed (on a busy machine a
        # replacement took longer than the two seconds to start, and the sweep stalled past 300 s).
        workers[index].wait_ready()
        workers[index].kill()
        workers[index] = farm_worker(queue="chaos", concurrency=4, env=env, wait=False)
        every.append(workers[index])
        kills += 1
    _assert_exactly_once(_report_while_progressing(store, sweep_id), 50, 40)
    assert kills >= 5, "the sweep ended before the kill loop got going: make it longer"
    print(f"2,000 runs, {kills} SIGKILLs; reconciler republished in {_republished(every)} passes")


def test_messages_lost_by_the_broker_are_published_again_and_counted_once(tmp_path, redis_client, farm_worker,
                                                                        farm_cli):
    """The broker's loss reproduced exactly: messages popped and never acknowledged nor restored
    (what a worker SIGKILLed between BRPOP and its unacked record leaves). Only the farm's
    reconciliation can finish this sweep; each lost run runs once more and counts once."""
    calls = tmp_path / "calls"
    env = {**LEASES, "FARM_TEST_CALLS": str(calls)}
    store = _store(farm_cli.broker)
    suite = write_suite(tmp_path / "l.jsonl", [{"id": f"l{i}", "input": "x"} for i in range(4)])
    sweep_id = _submit(farm_cli, suite, 5, "lossy", env, agent="by_run")
    lost = [json.loads(store.client.rpop("lossy"))["headers"]["argsrepr"] for _ in range(3)]  # the next 3 to go
    assert int(store.client.llen("lossy")) == 17
    workers = [farm_worker(queue="lossy", env=env)]
    report = _report(store, sweep_id, timeout=180)
    _assert_exactly_once(report, 4, 5)
    seen = Counter(tuple(line.split()) for line in calls.read_text().splitlines())
    assert len(seen) == 20 and set(seen.values()) == {1}, seen  # the lost ones ran once, when published again
    attempts = store.attempts(sweep_id)
    assert len([f for f in attempts if not f.endswith("@")]) == 3, (attempts, lost)
    assert all(int(v) == 2 for f, v in attempts.items() if not f.endswith("@"))
    assert _republished(workers) >= 1


def test_runs_lost_by_the_broker_are_published_again_long_before_the_case_timeout(tmp_path, redis_client,
                                                                                 farm_worker, farm_cli):
    """CI, stop 17: Redis restarted while a worker's BRPOP was in flight; the popped run was
    never recorded as unacknowledged. With the default run lease (visibility timeout + a 300 s
    case timeout) the repair waited five minutes and the submitter detached first. A sweep quiet
    for the visibility timeout, with nothing running and nothing waiting in its queue, has lost
    those runs: they are published again then, not after the case timeout."""
    env = {"FARM_VISIBILITY_TIMEOUT": "4"}
    store = _store(farm_cli.broker)
    suite = write_suite(tmp_path / "q.jsonl", [{"id": f"q{i}", "input": "x"} for i in range(3)])
    sweep_id = _submit(farm_cli, suite, 4, "quiet", env, agent="by_run")
    for _ in range(2):
        store.client.rpop("quiet")
    workers = [farm_worker(queue="quiet", env=env)]
    report = _report(store, sweep_id, timeout=90)  # far short of the 304 s lease: only the quiet rule can finish it
    _assert_exactly_once(report, 3, 4)
    assert _republished(workers) >= 1


def test_publishing_reads_the_plans_index_not_its_cases(tmp_path, redis_client, farm_cli):
    """Issue 16: a worker topping up a window reads (id, runs, timeout) per case from the plan's
    index, never every stored case; the same index gives the report's case order."""
    from farm.distributed.delivery.publish import ordered_slots
    from farm.plan.sweep_plan import CaseSlot

    store = _store(farm_cli.broker)
    suite = write_suite(tmp_path / "i.jsonl", [{"id": "slow one", "input": "x", "timeout": "7s"},
                                               {"id": "i1", "input": "x"}])
    sweep_id = _submit(farm_cli, suite, 3, "index", {}, agent="by_run")
    sweep = store.load_sweep(sweep_id)
    assert sweep is not None
    slots = store.plan_slots(sweep_id)
    assert [(s.id, s.runs) for s in slots] == [("slow one", 3), ("i1", 3)]
    assert slots == [CaseSlot("slow one", 3, 7.0), CaseSlot("i1", 3, sweep.max_case_timeout_s)]  # the default: 300
    assert ordered_slots(store, sweep) == slots
    assert store.case_ids(sweep_id) == ["slow one", "i1"]


def test_submitter_killed_mid_publish_still_leads_to_a_finished_sweep(tmp_path, redis_client, farm_worker,
                                                                      farm_cli):
    """Issue 11, finding 2: the plan and the cursor were stored, half the runs published, then the
    submitter died: a worker's reconciler finds its publisher lease expired and publishes the rest."""
    env = {**LEASES, "FARM_PUBLISH_BATCH": "1", "FARM_NO_WORKER_TIMEOUT": "600"}
    store = _store(farm_cli.broker)
    cases, runs = 30, 100
    suite = write_suite(tmp_path / "p.jsonl", [{"id": f"p{i}", "input": "x"} for i in range(cases)])
    submitter = farm_cli.popen("test", "-i", str(suite), "-n", f"{AGENTS}:by_run", "--runs", str(runs),
                               "--queue", "pub", "--broker", farm_cli.broker, "--no-progress",
                               "-o", str(tmp_path / "never.json"), env=env)
    try:
        sweep_id = wait_for(lambda: next(iter(store.in_flight_ids()), None), 60, "the sweep to be stored")
        wait_for(lambda: (store.cursor(sweep_id) or 0) >= 200, 60, "publishing to be under way")
        submitter.send_signal(signal.SIGKILL)
        submitter.wait(timeout=30)
    finally:
        if submitter.poll() is None:
            submitter.kill()
    published = store.cursor(sweep_id)
    assert published is not None and published < cases * runs, "published everything before the kill: enlarge it"
    assert int(store.client.llen("pub")) <= published + 1  # nothing beyond the cursor was sent
    wait_for(lambda: not store.publisher_alive(sweep_id), 60, "the dead publisher's lease to expire")
    assert f"published {published}/{cases * runs} (publisher gone" in farm_cli.run("status").stdout
    workers = [farm_worker(queue="pub", concurrency=8, env=env) for _ in range(2)]
    report = _report_while_progressing(store, sweep_id)
    assert report["metadata"]["status"] == "complete"
    assert report["summary"]["total_runs"] == cases * runs
    for case in report["results"]:
        assert sorted(d["run"] for d in case["run_details"]) == list(range(1, runs + 1))
    assert any("publishing from run" in w.text() for w in workers)
    status = json.loads(farm_cli.run("status", "--json").stdout)
    assert status["sweeps"] == []


def test_a_sweep_whose_plan_was_never_stored_whole_is_closed_abandoned(tmp_path, redis_client, farm_cli):
    """No publish cursor (the submitter died while storing the plan, before its last write) and no
    publisher: closed with a report saying ``abandoned`` and why; ``farm status`` drops it."""
    store = _store(farm_cli.broker)
    suite = write_suite(tmp_path / "a.jsonl", [{"id": "a0", "input": "x"}])
    sweep_id = _submit(farm_cli, suite, 2, "nobody-at-all", {})
    store.client.delete(keys.published_key(sweep_id), keys.publisher_key(sweep_id))
    assert reconcile_sweep(store, None, sweep_id, visibility_timeout_s=4) == "abandoned"
    report = store.get_report(sweep_id)
    assert report is not None and report.outcome.status == "abandoned"
    assert "vanished" in (report.outcome.reason or "") and report.outcome.not_run == ["a0"]
    assert json.loads(farm_cli.run("status", "--json").stdout)["sweeps"] == []


def test_timeouts_detach_without_cancelling_and_results_reattaches(tmp_path, redis_client, farm_worker, farm_cli):
    """Issue 11, finding 5: the no-worker timeout said "stays queued" but had cancelled the sweep."""
    suite = write_suite(tmp_path / "d.jsonl", [{"id": f"d{i}", "input": "x"} for i in range(3)])
    done = farm_cli.run("test", "-i", str(suite), "-n", f"{AGENTS}:by_run", "--runs", "4", "--queue", "later",
                        "--broker", farm_cli.broker, "--no-progress", env={"FARM_NO_WORKER_TIMEOUT": "3"},
                        timeout=120)
    assert done.returncode == 3, done.stderr
    assert "detached, not cancelled" in done.stderr and "re-attaches" in done.stderr
    store = _store(farm_cli.broker)
    (sweep_id,) = store.in_flight_ids()
    assert store.stop_reason(sweep_id) is None
    farm_worker(queue="later")
    out = tmp_path / "d.json"
    again = farm_cli.run("results", sweep_id, "-o", str(out), timeout=120)
    assert again.returncode == 0, again.stderr
    report = json.loads(out.read_text())
    assert report["metadata"]["status"] == "complete" and report["summary"]["total_runs"] == 12


def test_results_on_a_cancelled_sweep_answers_at_once_with_what_ran(tmp_path, redis_client, farm_cli):
    """No worker at all, a long no-worker timeout: only closing at once can answer."""
    suite = write_suite(tmp_path / "x.jsonl", [{"id": f"x{i}", "input": "x"} for i in range(3)])
    sweep_id = _submit(farm_cli, suite, 2, "nobody-here", {})
    assert farm_cli.run("cancel", sweep_id).returncode == 0
    out = tmp_path / "x.json"
    slow = {"FARM_NO_WORKER_TIMEOUT": "600", "FARM_STALL_TIMEOUT": "600"}
    done = farm_cli.run("results", sweep_id, "-o", str(out), env=slow, timeout=120)
    assert done.returncode == 3, done.stderr
    report = json.loads(out.read_text())
    assert report["metadata"]["status"] == "stopped" and report["metadata"]["stopped"] == "cancelled"
    assert report["metadata"]["not_run"] == ["x0", "x1", "x2"] and report["results"] == []
    assert "3 cases not run" in done.stderr
    status = json.loads(farm_cli.run("status", "--json").stdout)
    assert status["sweeps"] == []


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_on_the_submitter_cancels_and_reports_what_ran(tmp_path, redis_client, farm_worker, farm_cli, sig,
                                                              code):
    """Ctrl-C (and SIGTERM) is one of the three ways to stop a sweep, and says so: the runs not
    started are dropped on the workers, the report keeps what ran, exit 130."""
    env = {"FARM_TEST_SLEEP": "0.5", "FARM_STOP_GRACE": "2"}
    store = _store(farm_cli.broker)
    suite = write_suite(tmp_path / "i.jsonl", [{"id": f"i{i}", "input": "x"} for i in range(3)])
    farm_worker(queue="intr", concurrency=2, env=env)
    out = tmp_path / "i.json"
    submitter = farm_cli.popen("test", "-i", str(suite), "-n", f"{AGENTS}:slow", "--runs", "20", "--queue", "intr",
                               "--broker", farm_cli.broker, "--no-progress", "-o", str(out), env=env)
    try:
        sweep_id = wait_for(lambda: next(iter(store.in_flight_ids()), None), 60, "the sweep to be stored")
        wait_for(lambda: store.runs_done(sweep_id) >= 4, 120, "some runs")
        submitter.send_signal(sig)
        _stdout, stderr = submitter.communicate(timeout=120)
    finally:
        if submitter.poll() is None:
            submitter.kill()
    assert submitter.returncode == code, stderr
    assert "cancelled on the workers" in stderr
    report = json.loads(out.read_text())
    assert report["metadata"]["status"] == "stopped" and report["metadata"]["stopped"] == "interrupted"
    assert 4 <= report["summary"]["total_runs"] < 60
    assert store.stop_reason(sweep_id) == "interrupted" and store.in_flight_ids() == []


def test_publishing_in_windows_keeps_the_queue_bounded_and_counts_every_run_once(tmp_path, redis_client,
                                                                                 farm_worker, farm_cli):
    """Issue 16: a bounded number of a sweep's runs is queued at once, topped up by the workers as
    runs settle (the submitter detached after the first window)."""
    window = 40
    env = {**LEASES, "FARM_PUBLISH_WINDOW": str(window), "FARM_PUBLISH_BATCH": "10", "FARM_TEST_SLEEP": "0.02"}
    store = _store(farm_cli.broker)
    suite = write_suite(tmp_path / "w.jsonl", [{"id": f"w{i}", "input": "x"} for i in range(10)])
    sweep_id = _submit(farm_cli, suite, 30, "windows", env)
    assert store.cursor(sweep_id) == window and int(store.client.llen("windows")) == window
    farm_worker(queue="windows", concurrency=4, env=env)
    widest = queued = 0
    while store.get_report(sweep_id) is None:
        cursor, settled, _publisher = store.publishing_state(sweep_id)
        widest = max(widest, (cursor or 0) - settled)
        queued = max(queued, int(store.client.llen("windows")))
        time.sleep(0.02)
    assert 0 < widest <= window, widest
    assert queued <= window + 10, queued  # a case's farm.aggregate shares the queue
    _assert_exactly_once(_report(store, sweep_id), 10, 30)
    # attached, the submitter tops the window up itself
    out = tmp_path / "w.json"
    done = farm_cli.run("test", "-i", str(suite), "-n", f"{AGENTS}:slow", "--runs", "30", "--queue", "windows",
                        "--broker", farm_cli.broker, "--no-progress", "-o", str(out), env=env, timeout=240)
    assert done.returncode == 0, done.stderr
    _assert_exactly_once(json.loads(out.read_text()), 10, 30)


def test_a_cancelled_windowed_sweep_is_closed_by_the_workers_with_what_ran(tmp_path, redis_client, farm_worker,
                                                                           farm_cli):
    """The runs never published are settled as dropped, so the cases they complete are aggregated
    and the report comes without anyone attached."""
    env = {**LEASES, "FARM_PUBLISH_WINDOW": "20", "FARM_PUBLISH_BATCH": "5", "FARM_TEST_SLEEP": "0.1"}
    store = _store(farm_cli.broker)
    suite = write_suite(tmp_path / "cw.jsonl", [{"id": f"cw{i}", "input": "x"} for i in range(10)])
    sweep_id = _submit(farm_cli, suite, 20, "cwin", env)
    farm_worker(queue="cwin", concurrency=2, env=env)
    wait_for(lambda: store.runs_done(sweep_id) >= 25, 120, "some runs")
    assert farm_cli.run("cancel", sweep_id).returncode == 0
    report = _report(store, sweep_id, timeout=120)
    assert report["metadata"]["status"] == "stopped" and report["metadata"]["stopped"] == "cancelled"
    ran = report["summary"]["total_runs"]
    assert 25 <= ran < 200
    assert report["metadata"]["not_run"] and set(report["metadata"]["not_run"]) <= {f"cw{i}" for i in range(10)}
    assert store.settled_total(sweep_id) == 200  # every planned run settled once: run or dropped


def test_runs_lost_from_a_full_window_are_published_again(tmp_path, redis_client, farm_worker, farm_cli):
    """More than half a window lost: it never drains enough to be topped up, so only repair
    (republishing the published runs that went quiet) lets the sweep go on."""
    env = {**LEASES, "FARM_PUBLISH_WINDOW": "10", "FARM_PUBLISH_BATCH": "5"}
    store = _store(farm_cli.broker)
    suite = write_suite(tmp_path / "lw.jsonl", [{"id": f"lw{i}", "input": "x"} for i in range(4)])
    sweep_id = _submit(farm_cli, suite, 5, "lossywin", env, agent="by_run")
    lost = {_run_of(store.client.rpop("lossywin")) for _ in range(6)}
    assert store.cursor(sweep_id) == 10 and int(store.client.llen("lossywin")) == 4
    queued = {_run_of(m) for m in store.client.lrange("lossywin", 0, -1)}
    assert len(lost) == 6 and len(queued) == 4 and not lost & queued
    farm_worker(queue="lossywin", env=env)
    _assert_exactly_once(_report(store, sweep_id, timeout=180), 4, 5)
    republished = {f for f in store.attempts(sweep_id) if not f.endswith("@")}
    # every lost run was published again; a queued one may be too when the worker is slow to take
    # it (a busy machine), never a run the cursor had not passed
    assert lost <= republished <= lost | queued, (lost, queued, republished)


def _run_of(message: str | bytes) -> str:
    """The ``attempts`` field of a ``farm.run`` message as kombu's Redis transport stores it."""
    body = json.loads(base64.b64decode(json.loads(message)["body"]))
    _sweep_id, case_id, run = body[0]
    return keys.run_field(case_id, run)


def test_a_publishing_turn_starts_with_a_small_batch(tmp_path, redis_client, farm_cli):
    """The first FIRST_BATCH runs go out before the rest of the first full batch is built, so the
    workers start sooner; then batches of FARM_PUBLISH_BATCH (the cursor advances after each)."""
    from farm.distributed.delivery.publish import FIRST_BATCH

    advanced: list[int] = []
    ready = threading.Event()

    def watch() -> None:
        with redis.Redis.from_url(farm_cli.broker, decode_responses=True).monitor() as monitor:
            ready.set()
            for command in monitor.listen():
                words = command["command"].split()
                if len(words) > 4 and words[0] == "EVALSHA" and words[3].endswith(":published"):
                    advanced.append(int(words[4]))
                    if advanced[-1] >= 130:
                        return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    ready.wait(5)
    suite = write_suite(tmp_path / "f.jsonl", [{"id": f"f{i}", "input": "x"} for i in range(13)])
    _submit(farm_cli, suite, 10, "first-batch", {"FARM_PUBLISH_BATCH": "60"})
    watcher.join(10)
    # a script's first call is sent twice (EVALSHA, then again after SCRIPT LOAD): the same value
    assert list(dict.fromkeys(advanced)) == [FIRST_BATCH, FIRST_BATCH + 60, 130]
    assert int(redis_client.llen("first-batch")) == 130
