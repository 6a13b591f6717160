"""Fleet control that holds on a fleet (SPEC 15), on real ``farm worker`` processes over the
private Redis: a distributed budget loses no paid call, a limit binds every agent type, waiting
for a slot is not running.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.support.fleet_agents import (
    LATE_S,
    LATE_STARTS,
    PRICE,
    RATE_WINDOW_S,
    py_calls,
    py_peak,
    starts_per_second,
    usage_server,
    write_cmd_agent,
    write_py_agent,
)
from tests.support.fleet_project import report_of, write_suite

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def _prices(root: Path, key: str) -> Path:
    path = root / "prices.json"
    path.write_text(json.dumps({"models": {key: PRICE}}))
    return path


def _run_ids(report: dict) -> list[tuple[str, int]]:
    return sorted((case["id"], detail["run"]) for case in report["results"] for detail in case["run_details"])


@pytest.mark.parametrize("kind", ["http", "py"])
def test_a_distributed_budget_stops_at_exit_4_and_every_paid_call_is_a_run(kind, tmp_path, redis_client,
                                                                          farm_worker, farm_cli,
                                                                          counting_agent) -> None:
    for _ in range(2):
        farm_worker(queue=f"budget-{kind}", concurrency=3)
    suite = write_suite(tmp_path, "s.jsonl", [{"id": f"c{i}", "input": "go"} for i in range(3)])
    out = tmp_path / "report.json"
    with usage_server() as (served, server):
        if kind == "http":
            agent, calls = served.url + "/agent", lambda: server.calls
        else:  # the counting agent around the priced one: calls per (case, run) too
            priced, directory = write_py_agent(tmp_path)
            counted = counting_agent(priced.removeprefix("py:"))
            agent, calls = counted.ref, lambda: py_calls(directory)
        done = farm_cli.run("test", "-i", str(suite), "-n", agent, "--runs", "20", "--budget", "0.05",
                            "--broker", farm_cli.broker, "--queue", f"budget-{kind}", "--no-history",
                            "--no-progress", "-o", str(out),
                            env={"FARM_PRICES": str(_prices(tmp_path, agent))}, timeout=240)
        assert done.returncode == 4, done.stdout + done.stderr
        report = report_of(out)
        assert report["metadata"]["stopped"] == "budget"
        runs = _run_ids(report)
        assert len(runs) == len(set(runs)) == report["summary"]["total_runs"] == calls() >= 5
        assert all(d["status"] == "passed" or d["status"] == "failed"
                   for case in report["results"] for d in case["run_details"])
        assert report["summary"]["cost_usd"] == pytest.approx(0.01 * calls())
        if kind == "py":
            counted.assert_once_each(report["summary"]["total_runs"])


@pytest.mark.parametrize("kind", ["py", "cmd"])
def test_a_rate_limit_binds_python_and_command_agents_on_workers(kind, tmp_path, redis_client, farm_worker,
                                                                farm_cli, counting_agent) -> None:
    for _ in range(2):
        farm_worker(queue=f"limit-{kind}", concurrency=6)
    agent, directory = (write_py_agent if kind == "py" else write_cmd_agent)(tmp_path, delay_s=0.3)
    counted = counting_agent(agent.removeprefix("py:")) if kind == "py" else None  # calls per (case, run) too
    agent = counted.ref if counted else agent
    suite = write_suite(tmp_path, "s.jsonl", [{"id": f"c{i}", "input": "go", "expected": "yes"} for i in range(2)])
    out = tmp_path / "report.json"
    done = farm_cli.run("test", "-i", str(suite), "-n", agent, "--runs", "8", "--rate-limit", "*=5/s,3conc",
                        "--broker", farm_cli.broker, "--queue", f"limit-{kind}", "--no-history", "--no-progress",
                        "-o", str(out), timeout=240)
    assert done.returncode == 1, done.stdout + done.stderr  # half the runs answer "no"
    assert py_calls(directory) == 16
    if counted:
        counted.assert_once_each(16)
    assert 1 <= py_peak(directory) <= 3  # 12 threads on two workers, a cap of 3
    assert starts_per_second(directory) <= 5 + LATE_STARTS
    assert [(c["runs"], c["passed"]) for c in report_of(out)["results"]] == [(8, 4), (8, 4)]


@pytest.mark.parametrize("kill", [False, True], ids=["steady", "worker-killed"])
def test_runs_waiting_for_a_shared_limit_are_not_timed_out_and_verdicts_are_exact(kill, tmp_path, redis_client,
                                                                                  farm_worker, farm_cli) -> None:
    queue = f"queue-{kill}"
    # a dead worker's runs come back after the visibility timeout (its own default is minutes)
    env = {"FARM_VISIBILITY_TIMEOUT": "4"} if kill else {}
    workers = [farm_worker(queue=queue, concurrency=8, env=env) for _ in range(3)]
    suite = write_suite(tmp_path, "s.jsonl", [{"id": f"c{i}", "input": "go", "expected": "yes"} for i in range(10)])
    out = tmp_path / "report.json"
    with usage_server(delay_s=0.3) as (served, server):
        # 40 runs at 5/s and 3 in flight: the last queued run waits ~8 s for its slot, twice --timeout 4s
        # (a run's own 0.3 s call once took over 2 s on a machine at load 30)
        sweep = farm_cli.popen("test", "-i", str(suite), "-n", served.url + "/agent", "--runs", "4",
                               "--rate-limit", "*=5/s,3conc", "--timeout", "4s", "--broker", farm_cli.broker,
                               "--queue", queue, "--no-history", "--no-progress", "-o", str(out), env=env)
        if kill:
            deadline = time.time() + 120
            while server.calls < 8 and time.time() < deadline and sweep.poll() is None:
                time.sleep(0.05)
            workers[0].kill()
        stdout, stderr = sweep.communicate(timeout=400)
        assert sweep.returncode == 1, stdout + stderr  # every case half passes
        report = report_of(out)
        assert [(c["runs"], c["passed"], c["errors"], c["timeouts"]) for c in report["results"]] == [(4, 2, 0, 0)] * 10
        assert server.peak <= 3
        # 40 starts over ~8 s: counted over a longer window, which late starts stretch less
        assert server.max_starts_within(RATE_WINDOW_S) <= 5 * (RATE_WINDOW_S + LATE_S)
        queued = [d.get("queued_ms") for c in report["results"] for d in c["run_details"]]
        assert all(q is not None and q >= 0 for q in queued) and report["summary"]["queued_ms"] == pytest.approx(
            sum(queued), rel=1e-6, abs=1.0)
        durations = [d["duration_ms"] for c in report["results"] for d in c["run_details"]]
        assert max(durations) < 4000  # the wait for a slot is not in it (each call takes 0.3 s)
