"""In-process crashes: ``--isolate`` turns an agent's ``os._exit`` or segfault into a crashed run,
``SystemExit``/``KeyboardInterrupt`` from agent code are error runs, and without ``--isolate`` the
run journal still holds every run completed before the interpreter died.

Real ``python -m farm test`` subprocesses (a crash must not take pytest down with it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from farm.sweep.journal import journal_dir
from tests.support.processes import farm_env
from tests.support.servers import ROOT

CRASHY = "py:tests/agents/crashy.py:agent"
CRASH_CASES = [{"id": "exits", "input": "exit"}, {"id": "segfaults", "input": "segv"}]
ERROR_CASES = [{"id": "sysexit", "input": "sysexit"}, {"id": "interrupt", "input": "interrupt"}]


def _fine(n: int) -> list[dict]:
    return [{"id": f"fine{i}", "input": f"hi{i}", "assert": {"type": "contains", "value": "ok"}} for i in range(n)]


def _farm(tmp_path: Path, cases: list[dict], *args: str) -> subprocess.CompletedProcess[str]:
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps(c) + "\n" for c in cases))
    env = farm_env("redis://unused")
    env.pop("FARM_BROKER_URL")
    return subprocess.run([sys.executable, "-m", "farm", "test", "-i", str(suite), "-n", CRASHY, "--no-progress",
                           *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def _runs(path: Path) -> dict[str, list[dict]]:
    return {case["id"]: case["run_details"] for case in json.loads(path.read_text())["results"]}


def test_isolated_agents_that_kill_their_process_are_crashed_runs(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    done = _farm(tmp_path, [*_fine(3), *CRASH_CASES, *ERROR_CASES], "--isolate", "--runs", "2", "-o", str(out))
    assert done.returncode == 1, done.stderr  # failed cases, not a dead farm
    runs = _runs(out)
    for case_id in ("exits", "segfaults"):
        assert [r["failure_class"] for r in runs[case_id]] == ["crashed", "crashed"], runs[case_id]
        assert all(r["status"] == "error" and "process died" in r["error"] for r in runs[case_id])
    assert [r["error_type"] for r in runs["sysexit"]] == ["SystemExit", "SystemExit"]
    assert [r["error_type"] for r in runs["interrupt"]] == ["KeyboardInterrupt", "KeyboardInterrupt"]
    for i in range(3):
        assert [r["status"] for r in runs[f"fine{i}"]] == ["passed", "passed"]


def test_system_exit_and_keyboard_interrupt_from_agent_code_are_error_runs(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    done = _farm(tmp_path, [*_fine(1), *ERROR_CASES], "--runs", "2", "-o", str(out))
    assert done.returncode == 1, done.stderr
    runs = _runs(out)
    assert [(r["status"], r["error_type"]) for r in runs["sysexit"]] == [("error", "SystemExit")] * 2
    assert [(r["status"], r["error_type"]) for r in runs["interrupt"]] == [("error", "KeyboardInterrupt")] * 2
    assert [r["status"] for r in runs["fine0"]] == ["passed", "passed"]


def test_without_isolate_the_journal_keeps_the_runs_completed_before_the_crash(tmp_path: Path,
                                                                               farm_data_dir: Path) -> None:
    # --parallel 1: the plan's order, so the five fine runs completed before the crashing one started
    done = _farm(tmp_path, [*_fine(5), CRASH_CASES[0]], "--parallel", "1", "-o", str(tmp_path / "never.json"))
    assert done.returncode == 1, done.stderr  # os._exit(1): the interpreter is gone, no report
    assert not (tmp_path / "never.json").exists()
    [journal] = sorted(journal_dir(farm_data_dir).glob("*.jsonl"))
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    finished = sorted(e["id"] for e in events if e["type"] == "result")
    assert finished == [f"fine{i}" for i in range(5)]
