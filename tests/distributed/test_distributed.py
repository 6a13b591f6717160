"""The distributed farm end to end: real redis-server, real ``farm worker`` processes, the real CLI.

Parity with the in-process executor, detach/re-attach, cancel, status, the hung agent cut off
by the worker, and the submitter's failures (no broker, no worker) as exit 3 rather than a hang.
"""

from __future__ import annotations

import json
import time

import pytest

from farm.distributed.store import keys
from farm.distributed.store.sweep_store import Settled, SweepStore, Tally, connect
from tests.support.distributed_sweeps import AGENTS, PARITY_CASES, assert_parity, case_counts, write_suite

pytestmark = [pytest.mark.redis, pytest.mark.slow]

def test_sweep_on_workers_matches_in_process(tmp_path, redis_client, farm_worker, farm_cli, counting_agent):
    suite = write_suite(tmp_path / "parity.jsonl", PARITY_CASES)
    farm_worker(queue="parity")
    agent = counting_agent()  # one agent for both sweeps: the reports name it alike
    common = ["test", "-i", str(suite), "-n", agent.ref, "--runs", "6", "--no-progress"]
    local = farm_cli.run(*common, "-o", str(tmp_path / "local.json"), "--parallel", "4", local=True)
    agent.assert_once_each(18)  # 3 cases of 6 runs (the skipped one never calls)
    agent.clear()
    remote = farm_cli.run(*common, "-o", str(tmp_path / "remote.json"), "--broker", farm_cli.broker,
                          "--queue", "parity")
    assert local.returncode == remote.returncode == 1, remote.stderr  # 'mostly'/'rarely' miss 100 %
    agent.assert_once_each(18)
    remote_report = assert_parity(tmp_path / "local.json", tmp_path / "remote.json")
    sid = remote_report["metadata"]["sweep_id"]
    # the stored report holds no run details (a big sweep's would be all of them at once): its
    # renderers read them case by case, here on the submitter, with `farm results` and `farm report`
    stored = json.loads(redis_client.get(keys.report_key(sid)))
    assert stored["results"] and all(case["run_details"] == [] for case in stored["results"])
    again = farm_cli.run("results", sid, "-o", str(tmp_path / "again.json"), "--broker", farm_cli.broker)
    replayed = farm_cli.run("report", sid, "-o", str(tmp_path / "replayed.json"), "--broker", farm_cli.broker)
    assert again.returncode == 1 and replayed.returncode in (0, 1), again.stderr + replayed.stderr
    for name in ("again.json", "replayed.json"):
        assert case_counts(json.loads((tmp_path / name).read_text())) == case_counts(remote_report), name
    agent.assert_once_each(18)  # reading the sweep back calls nothing


def test_jsonl_stream_has_every_event_once(tmp_path, redis_client, farm_worker, farm_cli, counting_agent):
    suite = write_suite(tmp_path / "s.jsonl", PARITY_CASES[:2])
    farm_worker(queue="stream")
    out, agent = tmp_path / "out.jsonl", counting_agent()
    done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "5", "-o", str(out),
                        "--broker", farm_cli.broker, "--queue", "stream")
    assert done.returncode == 1, done.stderr
    agent.assert_once_each(10)
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert events[0]["type"] == "start" and events[-1]["type"] == "summary"
    results = sorted((e["id"], e["run"]) for e in events if e["type"] == "result")
    assert results == sorted((cid, n) for cid in ("mostly", "rarely") for n in range(1, 6))
    stability = [e for e in events if e["type"] == "stability"]
    assert sorted(e["id"] for e in stability) == ["mostly", "rarely"]
    for case in stability:  # every result line of a case comes before its stability line
        last_result = max(i for i, e in enumerate(events) if e["type"] == "result" and e["id"] == case["id"])
        assert last_result < events.index(case)


def test_hung_agent_is_cut_off_and_recorded_as_timeout(tmp_path, redis_client, farm_worker, farm_cli,
                                                       counting_agent):
    suite = write_suite(tmp_path / "hang.jsonl", [{"id": "hangs", "input": "hi", "timeout": "2s"},
                                                  {"id": "fine", "input": "hi"}])
    farm_worker(queue="hang")
    out, stream = tmp_path / "hang.json", tmp_path / "hang-runs.jsonl"
    agent = counting_agent("tests/agents/distributed.py:hang")
    done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "2", "-o", str(out),
                        "-o", str(stream), "--broker", farm_cli.broker, "--queue", "hang", "--timeout", "3s",
                        timeout=90)
    assert done.returncode == 1, done.stderr
    agent.assert_once_each(4)  # a run cut off is a timeout, not a run to call again
    report = {c["id"]: c for c in json.loads(out.read_text())["results"]}
    assert report["hangs"]["timeouts"] == 2 and report["fine"]["timeouts"] == 2
    assert all("timed out" in d["error"] or "cut off" in d["error"] for d in report["hangs"]["run_details"])
    results = [json.loads(line) for line in stream.read_text().splitlines() if '"result"' in line]
    assert {r["failure_class"] for r in results} == {"timeout"}  # classed where the run was cut off


def test_detach_results_status_and_cancel(tmp_path, redis_client, farm_worker, farm_cli, counting_agent):
    suite = write_suite(tmp_path / "d.jsonl", PARITY_CASES[:2])
    agent = counting_agent()
    submitted = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "3",
                             "--broker", farm_cli.broker, "--queue", "detach", "--detach")
    assert submitted.returncode == 0, submitted.stderr
    sweep_id = submitted.stdout.strip()
    # Nobody consumes 'detach' yet: status shows the waiting runs and the sweep in flight.
    status = json.loads(farm_cli.run("status", "--json").stdout)
    assert status["queues"]["detach"] == 6
    assert [s["sweep_id"] for s in status["sweeps"]] == [sweep_id]
    worker = farm_worker(queue="detach")
    out = tmp_path / "again.json"
    attached = farm_cli.run("results", sweep_id, "-o", str(out), timeout=60)
    assert attached.returncode == 1, attached.stderr
    report = json.loads(out.read_text())
    assert report["metadata"]["sweep_id"] == sweep_id
    assert [c["runs"] for c in report["results"]] == [3, 3]
    agent.assert_once_each(6)
    # A finished sweep re-attaches too, from the stored stream; stdout gets the JSONL events.
    replay = farm_cli.run("results", sweep_id, timeout=60)
    assert [json.loads(line)["type"] for line in replay.stdout.splitlines()].count("result") == 6
    # Every format from one attach, as the README's CI matrix collects it (issue 39).
    many = farm_cli.run("results", sweep_id, "-o", str(tmp_path / "r.html"), "-o", str(tmp_path / "junit.xml"),
                        "-o", str(tmp_path / "r.jsonl"), timeout=60)
    assert many.returncode == 1, many.stderr
    assert "<testsuite" in (tmp_path / "junit.xml").read_text() and (tmp_path / "r.html").stat().st_size
    assert [json.loads(line)["type"] for line in (tmp_path / "r.jsonl").read_text().splitlines()].count("result") == 6
    assert many.stderr.count("report: ") == 3 and many.stdout == ""
    status = json.loads(farm_cli.run("status", "--json").stdout)
    assert status["sweeps"] == []
    assert any(w["name"].startswith(worker.name) and "detach" in w["queues"] for w in status["workers"])
    text = farm_cli.run("status").stdout
    assert "detach: 0 waiting" in text and worker.name in text
    assert "already finished" in farm_cli.run("cancel", sweep_id).stdout
    agent.assert_once_each(6)  # re-attaching twice called nothing


def test_cancel_drops_runs_not_started(tmp_path, redis_client, farm_worker, farm_cli, counting_agent):
    suite = write_suite(tmp_path / "c.jsonl", [{"id": f"c{i}", "input": "x"} for i in range(3)])
    agent = counting_agent("tests/agents/distributed.py:slow")
    submitted = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "4",
                             "--broker", farm_cli.broker, "--queue", "cancel", "--detach")
    sweep_id = submitted.stdout.strip()
    cancelled = farm_cli.run("cancel", sweep_id)
    assert cancelled.returncode == 0 and "cancelled" in cancelled.stdout
    farm_worker(queue="cancel")
    out = tmp_path / "c.json"
    done = farm_cli.run("results", sweep_id, "-o", str(out), timeout=60)
    assert done.returncode == 3, done.stderr  # the sweep did not finish: a runtime outcome, not a pass
    report = json.loads(out.read_text())
    assert report["metadata"]["stopped"] == "cancelled" and report["results"] == []
    assert agent.calls == 0  # the agent was never called
    assert farm_cli.run("cancel", "no-such-sweep").returncode == 2


def test_fail_fast_stops_runs_once_a_case_cannot_pass(tmp_path, redis_client, farm_worker, farm_cli,
                                                      counting_agent):
    doomed = {"id": "doomed", "input": "x", "assert": {"type": "equals", "value": "never"}}
    suite = write_suite(tmp_path / "ff.jsonl", [doomed] + [{"id": f"later{i}", "input": "x"} for i in range(4)])
    farm_worker(queue="ff", concurrency=1)
    out, agent = tmp_path / "ff.json", counting_agent()
    done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "3", "--fail-fast",
                        "-o", str(out), "--broker", farm_cli.broker, "--queue", "ff", timeout=60)
    assert done.returncode == 1, done.stderr
    report = json.loads(out.read_text())
    assert report["metadata"]["stopped"] == "fail-fast"
    assert report["results"][0]["id"] == "doomed" and report["results"][0]["failed"] >= 1
    assert report["summary"]["total_runs"] < 15  # one worker thread: the first failure stopped the rest
    agent.assert_once_each(report["summary"]["total_runs"])  # a dropped run was never called


def test_the_same_fail_fast_sweep_reports_the_same_way_on_both_executors(tmp_path, redis_client, farm_worker,
                                                                          farm_cli, counting_agent):
    """One sweep finisher (farm.sweep.lifecycle): stop reason, cases not run and totals agree (issue 15's bug:
    the distributed summary said "0 cases not run" and left them out)."""
    doomed = {"id": "doomed", "input": "x", "assert": {"type": "equals", "value": "never"}}
    suite = write_suite(tmp_path / "ff.jsonl", [doomed] + [{"id": f"later{i}", "input": "x"} for i in range(4)])
    farm_worker(queue="ffparity", concurrency=1)
    agent = counting_agent()  # one agent for both sweeps: the summaries name it alike
    common = ["test", "-i", str(suite), "-n", agent.ref, "--runs", "3", "--fail-fast", "--no-progress",
              "--parallel", "1"]
    local = farm_cli.run(*common, "-o", str(tmp_path / "local.json"), local=True)
    agent.assert_once_each(1)  # the doomed case's first run, and nothing after it
    agent.clear()
    remote = farm_cli.run(*common, "-o", str(tmp_path / "remote.json"), "--broker", farm_cli.broker,
                          "--queue", "ffparity", timeout=60)
    assert local.returncode == remote.returncode == 1, remote.stderr
    agent.assert_once_each(1)
    reports = [json.loads((tmp_path / f"{side}.json").read_text()) for side in ("local", "remote")]
    for report in reports:
        assert report["metadata"]["stopped"] == "fail-fast" and report["metadata"]["status"] == "stopped"
        assert report["metadata"]["not_run"] == ["later0", "later1", "later2", "later3"]
        assert [(c["id"], c["runs"], c["runs_planned"]) for c in report["results"]] == [("doomed", 1, 3)]
    summaries = [{k: v for k, v in r["summary"].items() if k != "duration_ms"} for r in reports]
    assert summaries[0] == summaries[1]
    assert "stopped early (fail-fast): 4 cases not run" in local.stderr
    assert "stopped early (fail-fast): 4 cases not run" in remote.stderr


def test_unreachable_broker_exits_3(tmp_path, farm_cli):
    from tests.support.servers import free_port

    suite = write_suite(tmp_path / "u.jsonl", PARITY_CASES[:1])
    url = f"redis://127.0.0.1:{free_port()}/0"
    done = farm_cli.run("test", "-i", str(suite), "-n", f"{AGENTS}:by_run", "--broker", url, timeout=60)
    assert done.returncode == 3
    assert f"cannot reach the broker at {url}" in done.stderr
    # checked before anything is announced: no sweep id, no journal of a sweep that never started
    assert "sweep " not in done.stderr and "journal" not in done.stderr, done.stderr
    assert farm_cli.run("results", "x", "--broker", url).returncode == 3


def test_the_start_hint_names_a_broker_that_is_not_the_default(tmp_path, redis_client, farm_worker, farm_cli,
                                                              counting_agent):
    farm_worker()
    suite = write_suite(tmp_path / "h.jsonl", PARITY_CASES[:1])
    agent = counting_agent()
    done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--broker", farm_cli.broker,
                        "--runs", "3", env={"FARM_BROKER_URL": ""}, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    agent.assert_once_each(3)
    line = next(line for line in done.stderr.splitlines() if "farm status" in line)
    sid = line.split()[1]
    assert f"farm status --broker {farm_cli.broker}; farm results {sid} --broker {farm_cli.broker}; " \
           f"farm cancel {sid} --broker {farm_cli.broker}" in line, line


def test_a_detached_sweeps_hints_name_a_broker_that_is_not_the_default(tmp_path, redis_client, farm_cli):
    """Pasted, ``farm results ID`` must ask the sweep's Redis, not the default one (issue 39)."""
    suite = write_suite(tmp_path / "h.jsonl", PARITY_CASES[:1])
    detached = farm_cli.run("test", "-i", str(suite), "-n", f"{AGENTS}:by_run", "--broker", farm_cli.broker,
                            "--detach", "--own-queue", env={"FARM_BROKER_URL": ""}, timeout=120)
    assert detached.returncode == 0, detached.stderr
    sid = detached.stdout.strip()
    assert f"farm results {sid} --broker {farm_cli.broker}`" in detached.stderr, detached.stderr
    assert f"farm worker --sweep {sid} --broker {farm_cli.broker} " in detached.stderr, detached.stderr
    assert farm_cli.run("cancel", sid, "--broker", farm_cli.broker).returncode in (0, 3)


def test_no_worker_fails_with_exit_3_instead_of_hanging(tmp_path, redis_client, farm_cli):
    suite = write_suite(tmp_path / "n.jsonl", PARITY_CASES[:1])
    done = farm_cli.run("test", "-i", str(suite), "-n", f"{AGENTS}:by_run", "--queue", "nobody",
                        "--broker", farm_cli.broker, env={"FARM_NO_WORKER_TIMEOUT": "3"}, timeout=90)
    assert done.returncode == 3
    assert "no worker consumes queue 'nobody'" in done.stderr  # the early warning
    assert "no worker consumed queue 'nobody' for 3s" in done.stderr


def test_a_stall_with_no_worker_says_no_worker_consumes_the_queue(tmp_path, redis_client, farm_cli):
    """The stall limit can come first (CI stop 20, with every worker gone): then it must not claim
    that workers are up."""
    suite = write_suite(tmp_path / "n.jsonl", PARITY_CASES[:1])
    done = farm_cli.run("test", "-i", str(suite), "-n", f"{AGENTS}:by_run", "--queue", "nobody-stalls",
                        "--broker", farm_cli.broker, env={"FARM_NO_WORKER_TIMEOUT": "600", "FARM_STALL_TIMEOUT": "3"},
                        timeout=90)
    assert done.returncode == 3
    assert "made no progress for 3s and no worker consumes its queue" in done.stderr
    assert "start workers on queue 'nobody-stalls'" in done.stderr


def test_store_counts_a_redelivered_run_once(redis_client, redis_server):
    """The set-if-absent write and the stream append are one atomic step."""
    from farm.models import RunResult, RunStatus

    store = SweepStore(connect(redis_server))
    first = RunResult(case_id="c", run=1, status=RunStatus.PASSED, output="a")
    again = RunResult(case_id="c", run=1, status=RunStatus.FAILED, output="b")
    assert store.store_run("s1", first) == (Tally(counted=1, passed=1), Settled(True, 1, False))
    assert store.store_run("s1", again) == (None, Settled(False, 1, False))
    assert store.get_run("s1", "c", 1) == first
    events = store.read_events("s1", "0-0", block_ms=None)
    assert [(e.type, RunResult.model_validate_json(e.data or "").output) for e in events] == [("result", "a")]
    assert store.store_case("s1", "c", None) == 1 and store.store_case("s1", "c", None) == 1
    assert store.stop("s1", "cancelled") is True and store.stop("s1", "fail-fast") is False
    assert store.stop_reason("s1") == "cancelled"
    assert 0 < redis_client.ttl("farm:sweep:s1:run:c:1") <= 7 * 24 * 3600


def test_report_latch_expires_before_a_redelivered_aggregate_looks(redis_client, redis_server):
    """An aggregate that died between claiming the latch and queuing farm.report is redelivered
    after the visibility timeout; by then the latch must be gone, or the sweep never reports."""
    from farm.distributed.store.keys import report_latch_ttl

    assert report_latch_ttl(30) == 15 and report_latch_ttl(360) == 120 and report_latch_ttl(1) == 1
    store = SweepStore(connect(redis_server))
    assert store.claim_report("s-latch", report_latch_ttl(30)) is True
    assert store.claim_report("s-latch", report_latch_ttl(30)) is False
    assert 0 < redis_client.ttl("farm:sweep:s-latch:report-latch") <= 15


def test_nightly_task_submits_the_configured_suite(tmp_path, redis_client, redis_server):
    from workers.nightly import start_nightly

    suite = write_suite(tmp_path / "nightly.jsonl", PARITY_CASES[:2])
    sweep_id = start_nightly(str(suite), redis_server, f"--runs 2 -n {AGENTS}:by_run --queue nightly")
    store = SweepStore(connect(redis_server))
    stored = store.load_sweep(sweep_id)
    assert stored is not None and stored.total_runs == 4 and stored.queue == "nightly"
    assert redis_client.llen("nightly") == 4


def test_barrier_fires_once_and_again_for_a_redelivery_until_the_case_is_aggregated(redis_client, redis_server):
    """Dropped and stored runs settle once each; a redelivered run re-fires until ``cases-done``."""
    from farm.models import RunResult, RunStatus

    store = SweepStore(connect(redis_server))
    runs = 3
    _tally, first = store.store_run("s2", RunResult(case_id="c", run=2, status=RunStatus.PASSED))
    assert first == Settled(True, 1, False) and not first.fires(runs)
    assert store.settle("s2", "c", 1) == Settled(True, 2, False)  # dropped by a stop
    assert store.settle("s2", "c", 1) == Settled(False, 2, False)  # … and delivered again: still 2
    _tally, last = store.store_run("s2", RunResult(case_id="c", run=3, status=RunStatus.FAILED))
    assert last == Settled(True, 3, False) and last.fires(runs)
    # The worker died before enqueuing the aggregate: its redelivered run must fire it again.
    redelivered = store.settle("s2", "c", 3)
    assert redelivered == Settled(False, 3, False) and redelivered.fires(runs)
    store.store_case("s2", "c", None)  # the aggregate ran
    assert not store.settle("s2", "c", 3).fires(runs)
    assert store.settle("s2", "other", 1) == Settled(True, 1, False)  # per case


def test_a_runs_marker_is_its_lease_and_its_crash_record_in_one_round_trip(redis_client, redis_server):
    """``begin_run`` sets the run's one marker (when, holder, deaths); a later delivery learns from
    it whether the holder died with the run in flight; the step that settles the run clears it."""
    from farm.distributed.store import keys
    from farm.models import RunResult, RunStatus

    store = SweepStore(connect(redis_server))
    redis_client.set(keys.worker_alive_key("alive"), "1")
    first = store.begin_run("m1", "c", 1, "dead")  # a first delivery: an EXISTS and one HSETNX
    assert (first.stop, first.stored, first.deaths, first.duplicate) == (None, False, 0, False)
    began = store.running("m1")["c:1"]
    assert abs(began - time.time()) < 60
    again = store.begin_run("m1", "c", 1, "alive")  # "dead" has no heartbeat: it died with the run
    assert (again.deaths, again.duplicate) == (1, False)
    twin = store.begin_run("m1", "c", 1, "other")  # "alive" beats: a concurrent duplicate, marker kept
    assert (twin.deaths, twin.duplicate) == (1, True)
    assert json.loads(redis_client.hget(keys.running_key("m1"), "c:1"))["h"] == "alive"
    assert store.begin_run("m1", "c", 1, "alive").deaths == 1  # a retry in the same process: nothing new
    store.stop("m1", "cancelled")
    stopped = store.begin_run("m1", "c", 2, "alive")
    assert stopped.stop == "cancelled" and not stopped.stored
    store.settle("m1", "c", 2)  # dropped: settled, its marker gone
    store.store_run("m1", RunResult(case_id="c", run=1, status=RunStatus.PASSED))
    assert store.running("m1") == {}
    assert store.begin_run("m1", "c", 1, "alive").stored


def test_redelivered_runs_of_a_counted_case_still_get_it_aggregated(tmp_path, redis_client, redis_server,
                                                                    farm_worker, farm_cli, counting_agent):
    """A worker stored every run of a case, then died before enqueuing ``farm.aggregate``: the
    redelivered runs (their messages were never acked) fire it, without calling the agent again."""
    from farm.models import RunResult, RunStatus

    suite = write_suite(tmp_path / "w.jsonl", [{"id": "counted", "input": "x"}, {"id": "fresh", "input": "y"}])
    agent = counting_agent()
    submitted = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "2",
                             "--broker", farm_cli.broker, "--queue", "window", "--detach")
    assert submitted.returncode == 0, submitted.stderr
    sweep_id = submitted.stdout.strip()
    store = SweepStore(connect(redis_server))
    for n in (1, 2):  # what the dead worker did: both runs of 'counted' stored and settled
        tally, _state = store.store_run(sweep_id, RunResult(case_id="counted", run=n, status=RunStatus.PASSED,
                                                            output="ok", sweep_id=sweep_id))
        assert tally is not None
    # their messages come back as kombu restores an unacked message: marked redelivered (a first
    # delivery does not ask whether its run is stored: ``SweepStore.begin_run``)
    for i, raw in enumerate(redis_client.lrange("window", 0, -1)):
        message = json.loads(raw)
        message["headers"]["redelivered"] = message["properties"]["delivery_info"]["redelivered"] = True
        redis_client.lset("window", i, json.dumps(message))
    farm_worker(queue="window")
    out = tmp_path / "w.json"
    done = farm_cli.run("results", sweep_id, "-o", str(out), timeout=60)
    assert done.returncode == 0, done.stderr
    report = {c["id"]: c for c in json.loads(out.read_text())["results"]}
    assert report["counted"]["runs"] == report["counted"]["passed"] == 2
    assert report["fresh"]["runs"] == 2
    assert agent.counts() == {("fresh", 1): 1, ("fresh", 2): 1}  # no run of 'counted' again


def test_worker_sends_task_events_only_when_asked(redis_client, farm_worker):
    """Task events cost worker CPU per run: off by default, on with ``--events`` or FARM_TASK_EVENTS=1."""
    quiet = farm_worker(queue="quiet")
    loud = farm_worker("--events", queue="loud")
    by_env = farm_worker(queue="env", env={"FARM_TASK_EVENTS": "1"})
    assert "task events: OFF" in quiet.text()
    assert "task events: ON" in loud.text() and "task events: ON" in by_env.text()


def test_a_ready_worker_runs_runs_with_its_collector_eased(tmp_path, redis_client, farm_worker, farm_cli):
    """``farm.collector.ease_for_good`` in a real worker: an agent running there sees the young
    generation at ``YOUNG_GENERATION`` and the worker's loaded objects frozen."""
    from farm.collector import YOUNG_GENERATION

    seen = tmp_path / "seen.txt"
    (tmp_path / "agent.py").write_text(
        "import gc\n"
        "def respond(messages):\n"
        f"    with open({str(seen)!r}, 'a') as f:\n"
        "        f.write(f'{gc.get_threshold()[0]} {gc.get_freeze_count() > 0}' + chr(10))\n"
        "    return 'pong'\n")
    suite = write_suite(tmp_path / "suite.jsonl", [{"id": "a", "input": "x", "assert": {"type": "contains",
                                                                                         "value": "pong"}}])
    farm_worker(queue="gc")
    done = farm_cli.run("test", "-i", str(suite), "-n", f"py:{tmp_path / 'agent.py'}:respond", "--runs", "2",
                        "--no-progress", "--broker", farm_cli.broker, "--queue", "gc", "-o", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    assert seen.read_text().splitlines() == [f"{YOUNG_GENERATION} True"] * 2
