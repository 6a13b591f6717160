"""Inputs a fuzzer found to end in a traceback or an impossible plan: each is now one clear line and
exit 2, and the agent is never called (a counting agent shows it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from farm.cli import main
from farm.defaults import MAX_RUNS_PER_CASE, MAX_SWEEP_RUNS
from farm.errors import InputError
from farm.suites import load_input
from tests.support.servers import ROOT

AGENT = '''
import os

def respond(messages, context):
    with open(os.environ["CALLS"], "a") as calls:
        calls.write("x")
    return "ok"
'''
GOOD = {"input": "hi", "assert": {"type": "contains", "value": "ok"}}


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "agent.py").write_text(AGENT)
    return tmp_path


def farm_test(project: Path, *args: str) -> tuple[int, str]:
    """``farm test`` in this process (a traceback fails the test: exceptions are not caught)."""
    result = CliRunner().invoke(main, ["test", "--no-progress", "--no-history", "-n", "py:agent.py:respond", *args],
                                env={"CALLS": str(project / "calls")}, catch_exceptions=False)
    return result.exit_code, result.output


def test_a_lone_surrogate_in_a_case_id_is_exit_2_naming_the_line(project: Path, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    monkeypatch.chdir(project)
    suite = project / "s.jsonl"
    # json.dumps writes "\ud800" as the six characters of its escape: what a fuzzer's file holds.
    suite.write_text(json.dumps({"id": "ok", **GOOD}) + "\n" + json.dumps({"id": "bad\ud800", **GOOD}) + "\n")
    code, output = farm_test(project, "-i", str(suite))
    assert code == 2, output
    assert f"{suite}:2: holds \\ud800, a lone UTF-16 surrogate escape" in output
    assert not (project / "calls").exists()
    with pytest.raises(InputError, match=r"s\.jsonl:2: holds \\ud800"):
        load_input(str(suite))
    # A surrogate pair is a character: it loads.
    suite.write_text(json.dumps({"id": "smile \U0001F600", **GOOD}) + "\n")
    assert [c.id for c in load_input(str(suite)).cases] == ["smile \U0001F600"]


def test_runs_past_the_bound_are_exit_2_before_anything_runs(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    (project / "s.jsonl").write_text(json.dumps({"id": "a", **GOOD}) + "\n")
    for runs in ("99999999999999999999", str(MAX_RUNS_PER_CASE + 1)):
        code, output = farm_test(project, "-i", "s.jsonl", "--runs", runs)
        assert code == 2, output
        assert f"--runs {runs}: must be at most {MAX_RUNS_PER_CASE:,}" in output
    assert not (project / "calls").exists()


def test_a_success_ratio_of_too_many_runs_is_exit_2_naming_the_key(project: Path, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    monkeypatch.chdir(project)
    case = project / "case.hocon"
    case.write_text('{"success_ratio": "1/99999999999", "interactions": [{"text": "hi", '
                    '"response": {"text": {"keywords": ["ok"]}}}]}\n')
    code, output = farm_test(project, "-i", str(case))
    assert code == 2, output
    assert f"{case}: success_ratio: 1/99999999999 plans 99,999,999,999 runs: at most {MAX_RUNS_PER_CASE:,}" in output
    assert not (project / "calls").exists()


def test_a_sweep_of_too_many_runs_in_all_is_refused_not_started(project: Path) -> None:
    cases = MAX_SWEEP_RUNS // MAX_RUNS_PER_CASE + 1  # each within the bound of a case, too many together
    (project / "s.jsonl").write_text("".join(json.dumps({"id": f"c{i}", **GOOD}) + "\n" for i in range(cases)))
    # A subprocess with a timeout: a farm that started the sweep would run for days, not fail.
    done = subprocess.run([sys.executable, "-m", "farm", "test", "--no-progress", "--no-history", "-i", "s.jsonl",
                           "-n", "py:agent.py:respond", "--runs", str(MAX_RUNS_PER_CASE)],
                          cwd=project, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "CALLS": str(project / "calls")})
    assert done.returncode == 2, done.stderr
    assert f"the sweep plans {cases * MAX_RUNS_PER_CASE:,} runs ({cases} cases): at most {MAX_SWEEP_RUNS:,}" \
        in done.stderr
    assert "Traceback" not in done.stderr and not (project / "calls").exists()
