"""Issue 25 item 3: an in-process sweep builds each agent and judge once. ``prepare_sweep`` builds
them to check them (exit 2 before anything runs); the local executor runs those same adapters,
hooked to fleet control afterwards (its limiter bound, its record/replay wrappers around them).

The count comes from the adapter registry: a ``counted`` agent type whose factory notes each
build, then builds the real python adapter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from farm import TestSettings, run_sweep
from farm.agents.hooks import AgentHooks
from farm.agents.options import AgentOptions
from farm.agents.registry import ADAPTERS, AdapterSpec
from farm.plan.fleet import FleetFlags

AGENT = "def answer(messages):\n    return 'hello'\n\n\ndef verdict(messages):\n    return 'PASS'\n"


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    built: list[str] = []
    python = ADAPTERS["python"]

    def counted(spec: AdapterSpec, options: AgentOptions, hooks: AgentHooks) -> Any:
        built.append(spec.agent_id or "?")
        return python(spec, options, hooks)

    monkeypatch.setitem(ADAPTERS, "counted", counted)
    return built


def _project(tmp_path: Path) -> Path:
    for name, entry in (("greeter", "answer"), ("critic", "verdict")):
        agent = tmp_path / "assistants" / name
        agent.mkdir(parents=True)
        (agent / "agent.py").write_text(AGENT)
        (agent / "package.yao").write_text(json.dumps({"type": "counted", "entry": f"agent.py:{entry}"}))
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps({"id": f"c{i}", "input": "hi", "assert": [
        {"type": "agent", "value": "says hello", "use": "agents:critic"}]}) + "\n" for i in range(3)))
    return suite


def test_an_in_process_sweep_builds_each_agent_and_judge_once(tmp_path: Path, builds: list[str]) -> None:
    suite = _project(tmp_path)
    report = run_sweep(TestSettings(input=str(suite), name="greeter", runs=4, cwd=str(tmp_path)))
    assert [case.pass_rate for case in report.results] == [100.0] * 3  # the judge was asked, and passed
    assert sorted(builds) == ["critic", "greeter"]


def test_fleet_control_wraps_the_adapters_built_once(tmp_path: Path, builds: list[str]) -> None:
    """``--record``: fleet control wraps the agent and the judge built when the sweep was checked:
    every agent call and the judge's are recorded."""
    suite = _project(tmp_path)
    recordings = tmp_path / "recorded"
    report = run_sweep(TestSettings(input=str(suite), name="greeter", runs=2, cwd=str(tmp_path),
                                    fleet=FleetFlags(record=str(recordings))))
    assert [case.pass_rate for case in report.results] == [100.0] * 3
    assert sorted(builds) == ["critic", "greeter"]
    assert len(list((recordings / "agent").rglob("*.json"))) == 6  # 3 cases x 2 runs
    assert list((recordings / "judge").rglob("*.json"))
