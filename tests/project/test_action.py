"""The GitHub Action (``action.yml``), its ``run:`` steps run locally in bash as a runner would.

Each step's ``${{ … }}`` expressions are filled in from the inputs and the earlier steps'
``$GITHUB_OUTPUT``; ``uses:`` steps are not run, but the upload step's paths must exist; the
install step is skipped (a ``farm`` on ``PATH`` runs this checkout instead).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.servers import ROOT

AGENT = '''
import os

def respond(messages, context):
    return "tails" if os.environ.get("AGENT_BROKEN") else "heads"
'''
SUITE = (
    '{"id": "heads-up", "input": "toss", "assert": {"type": "contains", "value": "heads"}}\n'
    '{"id": "greeting", "input": "hello", "assert": {"type": "contains", "value": "h"}}\n'
)
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


@dataclass
class Runner:
    """A local stand-in for the Actions runner: the environment files and the steps' outputs."""

    work: Path
    inputs: dict[str, str]
    env: dict[str, str]
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    uploaded: list[Path] = field(default_factory=list)

    def value(self, expression: str) -> str:
        parts = expression.split(".")
        if parts[0] == "inputs":
            return self.inputs[parts[1]]
        if parts[0] == "steps" and parts[2] == "outputs":
            return self.outputs.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"the test runner does not know ${{{{ {expression} }}}}")

    def fill(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self.value(m.group(1)), text)

    def run_step(self, step: dict[str, Any]) -> int:
        output = self.work / f"output-{step['id']}"
        output.write_text("")
        env = self.env | {k: self.fill(str(v)) for k, v in (step.get("env") or {}).items()} | {
            "GITHUB_OUTPUT": str(output)}
        done = subprocess.run(["bash", "-e", "-c", self.fill(step["run"])], env=env, cwd=self.work,
                              capture_output=True, text=True, timeout=600)
        self.outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        return done.returncode

    def upload(self, step: dict[str, Any]) -> None:
        paths = [Path(p.strip()) for p in self.fill(step["with"]["path"]).splitlines() if p.strip()]
        missing = [p for p in paths if not p.is_file()]
        assert not missing, f"the upload step names files that are not there: {missing}"
        self.uploaded += paths


def run_action(work: Path, **inputs: str) -> tuple[int, Runner]:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    given = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()} | inputs
    shims = work / "bin"
    shims.mkdir(exist_ok=True)
    (shims / "farm").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m farm "$@"\n')
    (shims / "farm").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FARM_", "GITHUB_", "INPUT_"))} | {
        "GITHUB_ACTION_PATH": str(ROOT), "GITHUB_STEP_SUMMARY": str(work / "summary.md"),
        "RUNNER_TEMP": str(work / "runner-temp"), "PYTHONPATH": str(ROOT), "FARM_DATA_DIR": str(work / "data"),
        "PATH": f"{shims}:{os.environ['PATH']}"}
    (work / "runner-temp").mkdir(exist_ok=True)
    runner = Runner(work, given, env)
    code = 0
    for step in action["runs"]["steps"]:
        if step["id"] == "install":
            continue  # this checkout is on PYTHONPATH already
        if "uses" in step:
            if step["uses"].startswith("actions/upload-artifact@"):
                runner.upload(step)
            continue
        code = runner.run_step(step)
    return code, runner


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "suite.jsonl").write_text(SUITE)
    return tmp_path


def test_the_summary_and_the_reports_are_written_and_failed_cases_fail_the_step(project: Path) -> None:
    code, runner = run_action(project, suite="suite.jsonl", agent="py:agent.py:respond", runs="5",
                              args="--min-pass-rate 90%")
    assert code == 0  # every case passed
    summary = (project / "summary.md").read_text()
    assert "heads-up" in summary and "greeting" in summary
    assert {p.name for p in runner.uploaded} == {"report.html", "junit.xml"}
    junit = next(p for p in runner.uploaded if p.name == "junit.xml")
    assert "<testsuite" in junit.read_text()

    broken = project / "broken"
    broken.mkdir()
    (broken / "agent.py").write_text(AGENT.replace('os.environ.get("AGENT_BROKEN")', "True"))
    (broken / "suite.jsonl").write_text(SUITE)
    code, _ = run_action(broken, suite="suite.jsonl", agent="py:agent.py:respond", runs="5")
    assert code == 1
    assert "heads-up" in (broken / "summary.md").read_text()


def test_the_history_file_a_workflow_keeps_holds_the_sweep_of_a_run_without_a_baseline(project: Path) -> None:
    """The README's workflow caches ``$FARM_DATA_DIR/history.sqlite*`` between runs; a sweep
    ``farm test`` left in the history's inbox (no baseline read the history) is in the file itself
    by the end of the action, so a cache of the file alone keeps it too."""
    code, _ = run_action(project, suite="suite.jsonl", agent="py:agent.py:respond", runs="5")
    assert code == 0
    restored = project / "next-run"
    restored.mkdir()
    shutil.copy(project / "data" / "history.sqlite", restored / "history.sqlite")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FARM_")} | {
        "PYTHONPATH": str(ROOT), "FARM_DATA_DIR": str(restored)}
    blessed = subprocess.run([sys.executable, "-m", "farm", "baseline", "set", "main", "last"], cwd=project, env=env,
                             capture_output=True, text=True, timeout=600)
    assert blessed.returncode == 0, blessed.stderr


def test_a_regression_against_a_json_baseline_fails_and_is_compared_in_the_summary(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FARM_")} | {
        "PYTHONPATH": str(ROOT), "FARM_DATA_DIR": str(project / "data")}
    made = subprocess.run([sys.executable, "-m", "farm", "test", "-i", "suite.jsonl", "-n", "py:agent.py:respond",
                           "--runs", "20", "-o", "base.json", "--no-history"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr

    code, _ = run_action(project, suite="suite.jsonl", agent="py:agent.py:respond", runs="20", baseline="base.json")
    assert code == 0  # unchanged against the baseline
    assert "## agent-farm comparison" in (project / "summary.md").read_text()

    broken = project / "broken"
    broken.mkdir()
    (broken / "agent.py").write_text(AGENT.replace('os.environ.get("AGENT_BROKEN")', "True"))
    (broken / "suite.jsonl").write_text(SUITE)
    code, runner = run_action(broken, suite="suite.jsonl", agent="py:agent.py:respond", runs="20",
                              baseline=str(project / "base.json"))
    assert code == 1
    comparison, report = (broken / "summary.md").read_text().split("# Agent Test Report")
    assert "2 regressed" in comparison and "| 🔴 regressed | heads-up | 20/20 100% | 0/20 0% |" in comparison
    assert "heads-up" in report
    assert runner.outputs["sweep"]["exit-code"] == "1"


def test_a_regression_against_a_history_baseline_name_fails(project: Path) -> None:
    history = f"sqlite:///{project / 'team.sqlite'}"
    code, _ = run_action(project, suite="suite.jsonl", agent="py:agent.py:respond", runs="20",
                         **{"history-url": history})
    assert code == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("FARM_")} | {"PYTHONPATH": str(ROOT)}
    blessed = subprocess.run([sys.executable, "-m", "farm", "baseline", "set", "main", "last", "--history", history],
                             cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert blessed.returncode == 0, blessed.stderr

    broken = project / "broken"
    broken.mkdir()
    (broken / "agent.py").write_text(AGENT.replace('os.environ.get("AGENT_BROKEN")', "True"))
    (broken / "suite.jsonl").write_text(SUITE)
    code, _ = run_action(broken, suite="suite.jsonl", agent="py:agent.py:respond", runs="20", baseline="main",
                         **{"history-url": history})
    assert code == 1
    assert "2 regressed" in (broken / "summary.md").read_text().split("# Agent Test Report")[0]


def test_a_matrix_file_runs_every_arm_and_an_arm_worse_than_the_baseline_fails(project: Path) -> None:
    (project / "matrix.toml").write_text('[[arm]]\nname = "good"\nagent = "py:agent.py:respond"\n\n'
                                         '[[arm]]\nname = "broken"\nagent = "py:broken.py:respond"\n')
    (project / "broken.py").write_text(AGENT.replace('os.environ.get("AGENT_BROKEN")', "True"))
    code, runner = run_action(project, suite="suite.jsonl", matrix="matrix.toml", runs="10")
    assert code == 1
    summary = (project / "summary.md").read_text()
    assert "## Matrix" in summary and "good (baseline)" in summary and "broken worse on 2" in summary
    junit = next(p for p in runner.uploaded if p.name == "junit.xml").read_text()
    assert junit.count("<testsuite ") == 2
