"""``farm assess`` groups a case's failures by class, then by meaning (SPEC 16)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from farm.semantic import missing_requirement
from tests.support.formats_fixtures import Project, farm, make_project
from tests.support.servers import openai_server

MISSING = missing_requirement()
pytestmark = pytest.mark.skipif(MISSING is not None,
                                reason=f"{MISSING} is not installed (pip install -e '.[semantic]')")
AGENTS = Path(__file__).resolve().parents[1] / "agents" / "meanings.py"


@pytest.fixture(scope="module")
def server() -> Any:
    with openai_server() as served:
        yield served


@pytest.fixture
def project(tmp_path: Path, server: Any) -> Project:
    project = make_project(tmp_path, server.url)
    project.connector("judge", "echo")
    shutil.copy(AGENTS, project.root / "agent.py")
    project.suite([{"id": "capital", "input": "What is the capital of Australia?",
                    "assert": {"type": "contains", "value": "Canberra"}}])
    return project


def _report(project: Project, agent: str = "refuses_or_errs") -> Path:
    report = project.root / "report.json"
    suite = project.agent_dir / "tests" / "cases.jsonl"
    result = farm(project, "test", "-i", str(suite), "-n", f"py:agent.py:{agent}", "--runs", "10",
                  "-o", str(report))
    assert result.exit_code == 1, result.output
    return report


def test_refusals_and_wrong_answers_are_two_modes_without_a_judge(project: Project) -> None:
    out = project.root / "assess.json"
    markdown = project.root / "assess.md"
    report = _report(project)
    assert farm(project, "assess", str(report), "--modes", str(project.root / "modes.json"),
                "-o", str(out), "-o", str(markdown)).exit_code == 0
    modes = json.loads(out.read_text())["cases"][0]["modes"]
    assert [(m["count"], m["failure_classes"]) for m in modes] == [(7, ["assertion:contains"]),
                                                                   (3, ["assertion:contains"])]
    assert modes[0]["mode"].startswith("assertion:contains: ") and "Sydney" in modes[1]["mode"]
    assert "### 7/10 failures (70.0%)" in markdown.read_text()
    # remembered: the same failures again match the known modes, in other words too
    again = project.root / "again.json"
    assert farm(project, "assess", str(report), "--modes", str(project.root / "modes.json"),
                "-o", str(again)).exit_code == 0
    assert not any(m["new"] for m in json.loads(again.read_text())["cases"][0]["modes"])


def test_with_a_judge_one_call_per_cluster(project: Project, server: Any) -> None:
    before = len(server.server.requests)
    out = project.root / "assess.json"
    assert farm(project, "assess", str(_report(project)), "--judge", "local.judge", "--no-memory",
                "-o", str(out)).exit_code == 0
    case = json.loads(out.read_text())["cases"][0]
    calls = [r for r in server.server.requests[before:]
             if "failure mode" in str(r["body"]["messages"][0]["content"])]
    assert case["judge_calls"] == len(calls) == 2  # ten failed runs, two meanings
    assert sum(m["count"] for m in case["modes"]) == 10  # the bundled judge names modes by class: one here
    sizes = "Runs that failed this way (samples of the same meaning): 7"
    assert any(sizes in str(r["body"]["messages"][1]["content"]) for r in calls)


def test_refusals_less_alike_than_the_threshold_are_still_one_mode(project: Project) -> None:
    """Issue 46: seven refusals whose wordings are 0.45-0.87 alike (0.06-0.15 from the wrong
    answers) and three wrong answers are two modes, 7 and 3; the absolute threshold 0.6 alone
    made three (5, 3, 2), "Sorry, I can't assist with this request." a mode of its own."""
    project.suite([{"id": "product", "input": "What is 6 times 7?", "assert": {"type": "contains", "value": "42"}}])
    out = project.root / "assess.json"
    report = _report(project, "refuses_or_says_41")
    assert farm(project, "assess", str(report), "--no-memory", "-o", str(out)).exit_code == 0
    modes = json.loads(out.read_text())["cases"][0]["modes"]
    assert [m["count"] for m in modes] == [7, 3], [m["mode"] for m in modes]
    assert "41" in modes[1]["mode"] and "41" not in modes[0]["mode"]


def test_a_remembered_mode_matches_its_meaning_in_another_first_wording(project: Project) -> None:
    """A mode is remembered by one example (``<class>: <first run's sample>``); the same ways of
    failing, another wording first, are the known modes again, not new ones: the refusal mode's
    example "I cannot help with that." and the new first run's "Sorry, I can't assist with this
    request." are 0.45 alike, but the mode's other answers mean the same as the example."""
    project.suite([{"id": "product", "input": "What is 6 times 7?", "assert": {"type": "contains", "value": "42"}}])
    memory = project.root / "modes.json"
    first, again = project.root / "first.json", project.root / "again.json"
    assert farm(project, "assess", str(_report(project, "refuses_or_says_41")), "--modes", str(memory),
                "-o", str(first)).exit_code == 0
    assert farm(project, "assess", str(_report(project, "refuses_or_says_41_reworded")), "--modes", str(memory),
                "-o", str(again)).exit_code == 0
    known = [(m["mode"], m["count"]) for m in json.loads(first.read_text())["cases"][0]["modes"]]
    found = json.loads(again.read_text())["cases"][0]["modes"]
    assert known[0][0].endswith("I cannot help with that.") and [c for _, c in known] == [7, 3]
    assert [(m["mode"], m["count"], m["new"]) for m in found] == [(mode, count, False) for mode, count in known]
