"""Ctrl-C and SIGTERM during an in-process ``farm test``: the completed runs are kept (SPEC 10).

A real ``python -m farm test`` subprocess runs a suite whose agent answers some runs at once and
hangs on others; once the completed runs are on disk, the test sends the signal. The sweep must
stop scheduling, give the hung runs a grace (FARM_STOP_GRACE=1 here), abandon them, write every
requested report from the completed runs, and exit 130 (SIGINT) or 143 (SIGTERM). A second
Ctrl-C quits at once, and the run journal still holds every completed run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from farm import SweepStop, TestSettings
from farm.api import prepare_sweep
from farm.sweep.journal import journal_dir
from farm.sweep.lifecycle import StopReason
from farm.sweep.local import LocalExecutor
from tests.support.servers import ROOT

AGENT = f"py:{ROOT / 'tests' / 'agents' / 'basic.py'}:stalls"
WAIT_S = 60.0
"""Longest wait for the subprocess to reach a state (generous: the machine is shared)."""

CASES = ["fast", "mixed", "stall", "after"]
"""With --runs 2 --parallel 2: fast runs twice, mixed run 1 answers and run 2 hangs, stall run 1
hangs: three runs complete and two are in flight when the signal comes; after never starts."""


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps({"id": c, "input": "x", "expected": "done"}) + "\n" for c in CASES))
    return suite


def _start(tmp_path: Path, farm_data_dir: Path, *extra: str, grace: str = "1") -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "farm", "test", "-i", str(_suite(tmp_path)), "-n", AGENT, "--runs", "2",
            "--parallel", "2", "--no-progress", "-o", str(tmp_path / "r.json"), "-o", str(tmp_path / "r.xml"),
            "-o", str(tmp_path / "r.jsonl"), *extra]
    env = {**_env(), "FARM_DATA_DIR": str(farm_data_dir), "FARM_STOP_GRACE": grace,
           "FARM_TEST_CALLS": str(tmp_path / "calls.txt")}  # the agent notes each call as it begins
    with (tmp_path / "stderr.txt").open("w") as err:  # a file: the test reads it while farm runs
        return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)


def _stderr(tmp_path: Path) -> str:
    return (tmp_path / "stderr.txt").read_text()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("FARM_")} | {"PYTHONPATH": str(ROOT)}


def _results_in(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text().splitlines() if line.endswith("}") and '"type": "result"' in line)


def _hung_in_flight(tmp_path: Path) -> bool:
    """Have the two runs that hang (mixed's run 2, stall's run 1) begun their calls?"""
    calls = tmp_path / "calls.txt"
    return calls.exists() and {"mixed 2", "stall 1"} <= set(calls.read_text().splitlines())


def _wait_until(process: subprocess.Popen[str], done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        if process.poll() is not None:
            raise AssertionError(f"farm exited early ({process.returncode}) before {what}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"never saw {what}")
        time.sleep(0.05)


def _interrupt(tmp_path: Path, farm_data_dir: Path, sig: signal.Signals) -> tuple[int, str]:
    process = _start(tmp_path, farm_data_dir)
    _wait_until(process, lambda: _results_in(tmp_path / "r.jsonl") >= 3, "3 completed runs")
    _wait_until(process, lambda: _hung_in_flight(tmp_path), "the two hung runs in flight")
    process.send_signal(sig)
    process.wait(timeout=WAIT_S)
    return process.returncode, _stderr(tmp_path)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_sweep_keeps_complete_reports_of_what_ran(tmp_path: Path, farm_data_dir: Path,
                                                               sig: signal.Signals, code: int) -> None:
    returncode, err = _interrupt(tmp_path, farm_data_dir, sig)
    assert returncode == code, err
    report = json.loads((tmp_path / "r.json").read_text())
    meta = report["metadata"]
    assert (meta["status"], meta["stopped"], meta["not_run"]) == ("stopped", "interrupted", ["stall", "after"])
    runs = {r["id"]: (r["runs"], r["runs_planned"], r["passed"]) for r in report["results"]}
    assert runs == {"fast": (2, 2, 2), "mixed": (1, 2, 1)}  # the hung runs were abandoned, not counted
    assert report["summary"]["total_runs"] == 3
    junit = ET.parse(tmp_path / "r.xml").getroot()
    assert sorted(c.attrib["name"] for c in junit.iter("testcase")) == ["fast", "mixed"]
    stream = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert stream[-1]["type"] == "summary" and stream[-1]["metadata"]["stopped"] == "interrupted"
    assert "stopped early (interrupted): 2 cases not run: stall, after; 1 case incomplete: mixed" in err
    assert "interrupted: no new runs" in err
    # mixed's one run passed: it is not a FAIL with no reason but incomplete, its missing run said
    row = next(line for line in err.splitlines() if " mixed " in line)
    assert row.startswith("incomplete") and "1 run not run" in row, row


def test_a_second_ctrl_c_quits_at_once_and_the_journal_keeps_every_completed_run(
        tmp_path: Path, farm_data_dir: Path) -> None:
    process = _start(tmp_path, farm_data_dir, grace="300")  # a grace no test waits for
    _wait_until(process, lambda: _results_in(tmp_path / "r.jsonl") >= 3, "3 completed runs")
    process.send_signal(signal.SIGINT)
    _wait_until(process, lambda: "press Ctrl-C again" in _stderr(tmp_path), "the first Ctrl-C handled")
    process.send_signal(signal.SIGINT)
    process.wait(timeout=WAIT_S)
    err = _stderr(tmp_path)
    assert process.returncode == 130, err
    assert "quitting at once" in err
    assert not (tmp_path / "r.json").exists()  # no graceful finish: it really quit
    journals = list(journal_dir(farm_data_dir).glob("*.jsonl"))
    assert len(journals) == 1
    done = subprocess.run([sys.executable, "-m", "farm", "report", str(journals[0]), "-o", str(tmp_path / "j.json")],
                          cwd=ROOT, env={**_env(), "FARM_DATA_DIR": str(farm_data_dir)}, capture_output=True,
                          text=True, timeout=WAIT_S, check=False)
    assert done.returncode == 3, done.stderr  # a partial journal is never green
    report = json.loads((tmp_path / "j.json").read_text())
    assert report["metadata"]["status"] == "abandoned"
    assert {r["id"]: r["runs"] for r in report["results"]} == {"fast": 2, "mixed": 1}
    assert report["metadata"]["not_run"] == ["stall", "after"]


def test_a_stop_request_from_another_thread_stops_an_in_process_sweep(tmp_path: Path) -> None:
    """The Python API's face of the same rule: ``run_sweep(..., stop=SweepStop())``."""
    settings = TestSettings(input=str(_suite(tmp_path)), name=AGENT, runs=2, parallel=2, cwd=str(tmp_path))
    prepared = prepare_sweep(settings)
    executor = LocalExecutor(grace_s=0.2)
    stop = SweepStop()
    seen: list[str] = []

    class StopAfterThree:
        def on_start(self, start: object) -> None: ...
        def on_case(self, stats: object) -> None: ...
        def on_finish(self, report: object) -> None: ...

        def on_result(self, result: object) -> None:
            seen.append(getattr(result, "case_id", ""))
            if len(seen) == 3:
                threading.Timer(0.2, stop.request, args=(StopReason.INTERRUPTED,)).start()

    report = executor.run(prepared.plan, StopAfterThree(), stop)
    assert report.outcome.stopped == "interrupted" and report.outcome.status == "stopped"
    assert [c.id for c in report.results] == ["fast", "mixed"] and report.outcome.not_run == ["stall", "after"]
