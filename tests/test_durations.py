"""Durations: one grammar (``30s``, ``1m``, ``2m30s``, ``1h``, ``.5s``, plain seconds) wherever a
duration is read, and one format wherever a report prints one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.agents.resolve import create_agent
from farm.durations import format_ms, parse_duration
from farm.errors import AgentResolutionError, SuiteError
from farm.suites import load_input


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("1m", 60.0),
        ("2m30s", 150.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("250ms", 0.25),
        ("1.5s", 1.5),
        (" 10M ", 600.0),
        ("30", 30.0),
        ("2.5", 2.5),
        (45, 45.0),
        (0.5, 0.5),
    ],
)
def test_parse(text: Any, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("soon", "not a duration: 'soon' (expected e.g. 30s, 1m, 2m30s, 1h)"),
        ("", "not a duration: ''"),
        ("1m5", "not a duration: '1m5'"),
        ("5 minutes", "not a duration: '5 minutes'"),
        ("-5s", "not a duration: '-5s'"),
        ("0s", "duration must be positive and finite, got '0s'"),
        (0, "duration must be positive and finite, got 0"),
        (-1, "duration must be positive and finite, got -1"),
        (float("nan"), "duration must be positive and finite"),
        (True, "not a duration: True"),
        (None, "not a duration: None"),
        ([1], "not a duration: [1]"),
        (10**400, "duration too large"),
    ],
)
def test_rejects(value: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(value)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("ms", "text"), [(0, "0ms"), (12.4, "12ms"), (234, "234ms"), (999.4, "999ms"), (1000, "1.0s"), (12_345, "12.3s"),
                     (65_400, "65.4s")]
)
def test_reports_print_durations_one_way(ms: float, text: str) -> None:
    assert format_ms(ms) == text


# ---------------------------------------------------------------- one grammar wherever it is read

SAMPLES = ["30", "30s", ".5s", "2m30s", "1h", "250ms", "1.5", 45, "soon", "0s", "-5s", "1m5"]


def _suite_timeout(tmp_path: Path, value: Any) -> float | str:
    path = tmp_path / f"suite-{abs(hash(str(value)))}.jsonl"
    path.write_text(json.dumps({"id": "T1", "input": "hi", "timeout": value}) + "\n")
    try:
        return load_input(str(path)).cases[0].timeout_s or 0.0
    except SuiteError:
        return "refused"


def _hocon_timeout(tmp_path: Path, value: Any) -> float | str:
    path = tmp_path / f"case-{abs(hash(str(value)))}.hocon"
    body = {"agent": "a", "timeout_in_seconds": value, "interactions": [{"text": "hi", "response": {}}]}
    path.write_text(json.dumps(body))
    try:  # the top-level timeout bounds the whole test, all its runs (farm.sweep.deadlines)
        return load_input(str(path)).cases[0].test_timeout_s or 0.0
    except SuiteError:
        return "refused"


def _manifest_timeout(tmp_path: Path, value: Any) -> float | str:
    agent_dir = tmp_path / f"agent-{abs(hash(str(value)))}"
    agent_dir.mkdir()
    (agent_dir / "package.yao").write_text(json.dumps({"type": "http", "url": "http://127.0.0.1:1/", "timeout": value}))
    options = AgentOptions.from_env(tmp_path)
    try:
        return create_agent(AgentRef("manifest", str(agent_dir)), options).timeout_s or 0.0  # type: ignore[attr-defined]
    except AgentResolutionError:
        return "refused"


def _flag_timeout(value: Any) -> float | str:
    try:
        return parse_duration(value)  # what --timeout calls (farm.cli)
    except ValueError:
        return "refused"


@pytest.mark.parametrize("value", SAMPLES)
def test_suites_manifests_and_the_flag_read_durations_alike(tmp_path: Path, value: Any) -> None:
    # Regression: an HTTP manifest had its own grammar and refused "30" and ".5s" that suites accept.
    readings = {
        "suite timeout": _suite_timeout(tmp_path, value),
        "hocon timeout_in_seconds": _hocon_timeout(tmp_path, value),
        "manifest timeout": _manifest_timeout(tmp_path, value),
        "--timeout": _flag_timeout(value),
    }
    assert len(set(readings.values())) == 1, readings


def test_a_manifest_with_a_bare_number_string_or_a_leading_dot_loads(tmp_path: Path) -> None:
    assert _manifest_timeout(tmp_path, "30") == 30.0
    assert _manifest_timeout(tmp_path, ".5s") == 0.5
