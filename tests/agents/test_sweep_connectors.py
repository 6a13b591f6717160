"""A whole sweep against a prompt agent behind a keyed OpenAI-compatible connector.

Real server on 127.0.0.1 (examples/servers/openai_server.py in its own process), the real CLI
in a subprocess, every output format: the key must appear nowhere, judges must work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import openai_server

KEY = "sk-farm-test-5f1c9a7e0d2b4c8e"


def make_project(root: Path, host: str) -> Path:
    conn = root / "connectors" / "local"
    conn.mkdir(parents=True)
    (conn / "keyed.conn.yao").write_text(json.dumps(
        {"type": "openai", "options": {"model": "priced-echo", "host": host, "key": "$ENV.FARM_TEST_OPENAI_KEY"}}
    ))
    agent = root / "assistants" / "extractor"
    (agent / "tests").mkdir(parents=True)
    (agent / "package.yao").write_text('{"type": "prompt", "connector": "local.keyed"}')
    (agent / "prompts.yml").write_text("- role: system\n  content: You extract keyword lists as JSON.\n")
    cases = [
        {"id": "kw", "input": "Celery workers stream results", "assert": [
            {"type": "json_path", "path": "$.keywords[0]", "value": "celery"},
            {"type": "agent", "value": "mentions 'workers'", "use": "local.keyed"}]},
        {"id": "judged-fail", "input": "nothing relevant", "assert":
            {"type": "agent", "value": "mentions 'kubernetes'"}},
        {"id": "equivocal", "input": "JUDGE_EQUIVOCAL here", "assert": {"type": "agent", "value": "anything"}},
    ]
    suite = agent / "tests" / "inputs.jsonl"
    suite.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    return suite


def run_farm(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FARM_TEST_OPENAI_KEY": KEY, "FARM_AGENTS_ROOT": str(root / "assistants")}
    return subprocess.run([sys.executable, "-m", "farm", "test", "--no-progress", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def server():
    with openai_server(key=KEY, separate_process=True) as served:
        yield served


@pytest.mark.slow
def test_prompt_agent_with_judges_and_no_key_anywhere(tmp_path: Path, server) -> None:
    suite = make_project(tmp_path, server.url)
    outputs = [tmp_path / f"report{ext}" for ext in (".jsonl", ".json", ".md", ".html", ".xml")]
    streams = ""
    for out in outputs:
        proc = run_farm(tmp_path, "-i", str(suite), "--judge", "local.keyed", "-o", str(out), "-v", "--runs", "2")
        assert proc.returncode == 1, proc.stderr  # judged-fail and equivocal fail, kw passes
        streams += proc.stdout + proc.stderr
    report = json.loads(outputs[1].read_text())
    by_id = {r["id"]: r for r in report["results"]}
    assert by_id["kw"]["case_passed"] and by_id["kw"]["pass_rate"] == 100.0
    failed = by_id["judged-fail"]["run_details"][0]["failed_checks"][0]
    assert failed["verdict"] == "fail" and "kubernetes" in failed["reason"]
    equivocal = by_id["equivocal"]["run_details"][0]["failed_checks"][0]
    assert equivocal["verdict"] == "equivocal"
    usage = [e for e in map(json.loads, outputs[0].read_text().splitlines()) if e["type"] == "result"]
    assert usage and all(e["status"] in ("passed", "failed") for e in usage)
    for out in outputs:
        assert KEY not in out.read_text(), out.name
    assert KEY not in streams


def test_missing_key_variable_is_an_input_error(tmp_path: Path, server) -> None:
    suite = make_project(tmp_path, server.url)
    env = {k: v for k, v in os.environ.items() if k != "FARM_TEST_OPENAI_KEY"}
    env["FARM_AGENTS_ROOT"] = str(tmp_path / "assistants")
    proc = subprocess.run([sys.executable, "-m", "farm", "test", "--no-progress", "-i", str(suite)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "FARM_TEST_OPENAI_KEY" in proc.stderr and "keyed.conn.yao" in proc.stderr


def test_wrong_key_is_a_run_error_that_does_not_leak(tmp_path: Path, server) -> None:
    suite = make_project(tmp_path, server.url)
    env = {**os.environ, "FARM_TEST_OPENAI_KEY": "sk-wrong-key-123456789", "FARM_AGENTS_ROOT": str(tmp_path)}
    out = tmp_path / "o.json"
    proc = subprocess.run([sys.executable, "-m", "farm", "test", "--no-progress", "-i", str(suite), "-k", "kw",
                           "-o", str(out)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    # every run's credentials refused: the agent could not be reached (exit 3, SPEC 20), not a failing suite
    assert proc.returncode == 3, proc.stderr
    assert "the agent could not be reached" in proc.stderr
    detail = json.loads(out.read_text())["results"][0]["run_details"][0]
    assert detail["status"] == "error" and "401" in detail["error"]
    assert "sk-wrong-key-123456789" not in out.read_text() + proc.stderr
