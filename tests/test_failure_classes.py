"""Failure classes (SPEC 14.2): the rules on hand-made runs, then every class made for real by a
sweep against the bundled OpenAI-compatible server (faults injected by model name), a closed port,
python agents and hooks; counts and examples per case and per sweep in JSON and JSONL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from farm.failures import classify_check, classify_error, classify_run
from farm.models import CheckOutcome, ErrorInfo, RunResult, RunStatus
from tests.formats_fixtures import Project, farm, make_project, read_report, result_of
from tests.servers import free_port, openai_server


@pytest.mark.parametrize(("error", "expected"), [
    (ErrorInfo(type="Timeout", message="run timed out after 1s"), "infra:timeout"),
    (ErrorInfo(type="AgentError", message="connector x: ConnectError: [Errno 111] Connection refused (gave up "
                                          "after 3 retries)"), "infra:connect"),
    (ErrorInfo(type="AgentError", message="agent a: cannot start ./nope: No such file"), "infra:connect"),
    (ErrorInfo(type="AgentError", message="connector x: HTTP 503: busy (gave up after 3 retries)"), "infra:5xx"),
    (ErrorInfo(type="AgentError", message="neuro-san: server error: boom"), "infra:5xx"),
    (ErrorInfo(type="AgentError", message="connector x: HTTP 429: slow down"), "infra:429"),
    (ErrorInfo(type="AgentError", message="HTTP 429: You exceeded your current quota"), "infra:quota"),
    (ErrorInfo(type="AgentError", message="agent a: no answer within 30s (ReadTimeout)"), "infra:timeout"),
    (ErrorInfo(type="AgentError", message="connector x: answer is not JSON: <html>"), "harness:parse"),
    (ErrorInfo(type="AgentError", message="connector local.echo: HTTP 401: invalid API key"), "harness:config"),
    (ErrorInfo(type="AgentError", message="agent a: exited with 1: Traceback"), "crashed"),
    (ErrorInfo(type="ValueError", message="the agent's own bug"), "crashed"),
    (ErrorInfo(type="HookError", message="before hook env.Before failed"), "harness:config"),
    (ErrorInfo(type="SimulatorReplyError", message="simulator error: empty"), "harness:parse"),
    (ErrorInfo(type="AgentResolutionError", message="simulator x: not found"), "harness:config"),
    (ErrorInfo(type="crashed", message="worker died twice"), "crashed"),
])
def test_errors_are_classed_by_type_then_message(error: ErrorInfo, expected: str) -> None:
    assert classify_error(error) == expected


@pytest.mark.parametrize(("check", "expected"), [
    (CheckOutcome(name="contains", passed=False), "assertion:contains"),
    (CheckOutcome(name="contains (negated)", passed=False), "assertion:contains"),
    (CheckOutcome(name="json_path", passed=False, expected={"path": "$.need_search", "value": True}),
     "assertion:json_path:$.need_search"),
    (CheckOutcome(name="text.keywords", passed=False), "assertion:keywords:text"),
    (CheckOutcome(name="structure.answer.value", passed=False), "assertion:value:structure.answer"),
    (CheckOutcome(name="checkpoint:ask-size", passed=False), "assertion:checkpoint:ask-size"),
    (CheckOutcome(name="agent", passed=False, verdict="fail"), "assertion:agent"),
    (CheckOutcome(name="agent", passed=False, verdict="equivocal", reason="no pass or fail"), "judge:equivocal"),
    (CheckOutcome(name="agent", passed=False, verdict="equivocal", reason="judge error: refused"), "judge:error"),
    (CheckOutcome(name="text.gist", passed=False, verdict=None, message="no judge is configured"), "judge:error"),
    (CheckOutcome(name="script", passed=False, message="script s:f raised KeyError: 'x'"), "harness:config"),
])
def test_failed_checks_are_classed_by_type_and_path(check: CheckOutcome, expected: str) -> None:
    assert classify_check(check) == expected


def test_the_first_failed_check_decides_and_gives_the_turn() -> None:
    checks = [CheckOutcome(name="contains", passed=True, turn=1), CheckOutcome(name="text.value", passed=False, turn=2),
              CheckOutcome(name="regex", passed=False, turn=3)]
    run = RunResult(case_id="c", run=1, status=RunStatus.FAILED, checks=checks, turns_completed=3)
    assert classify_run(run) == ("assertion:value:text", 2)
    assert classify_run(run.model_copy(update={"status": RunStatus.PASSED})) == (None, None)
    errored = RunResult(case_id="c", run=1, status=RunStatus.ERROR, turns_completed=1,
                        error=ErrorInfo(type="AgentError", message="HTTP 502: bad gateway"))
    assert classify_run(errored) == ("infra:5xx", 2)
    assert classify_run(errored, current_turn=1) == ("infra:5xx", 1)


# ------------------------------------------------------------------------- classes made for real


@pytest.fixture(scope="module")
def server() -> Any:
    with openai_server() as served:
        yield served


AGENT = '''
def crash(messages, context):
    raise ValueError("the agent's own bug")


def Before(ctx, case):
    raise OSError("db down")
'''


def _classes_project(tmp_path: Path, host: str) -> tuple[Project, Path]:
    project = make_project(tmp_path, host)
    models = {"down": None, "e500": "error-500", "r429": "fail-429x9-then-ok", "quota": "quota",
              "slow": "slow-3s", "broken": "malformed-json", "e401": "error-401"}
    for name, model in models.items():
        if model:
            project.connector(name, model)
    (project.root / "connectors" / "local" / "down.conn.yao").write_text(json.dumps(
        {"type": "openai", "options": {"model": "echo", "host": f"http://127.0.0.1:{free_port()}"}}))
    (project.agent_dir / "tests" / "agents.py").write_text(AGENT)
    cases = [{"id": f"infra-{name}", "input": "hello", "options": {"connector": f"local.{name}"}} for name in models]
    cases += [
        {"id": "contains", "input": "hello", "assert": {"type": "contains", "value": "goodbye"}},
        {"id": "json-path", "input": '{"need_search": false}', "assert": {"type": "json_path", "path": "$.need_search",
                                                                          "value": True}},
        {"id": "equivocal", "input": "JUDGE_EQUIVOCAL", "assert": {"type": "agent", "value": "polite",
                                                                    "use": "local.echo"}},
        {"id": "judge-down", "input": "hi", "assert": {"type": "agent", "value": "polite", "use": "local.down"}},
        {"id": "hook", "input": "hi", "before": "agents.py:Before"},
    ]
    return project, project.suite(cases)


def test_every_class_is_made_by_a_real_fault(tmp_path: Path, server: Any) -> None:
    project, suite = _classes_project(tmp_path, server.url)
    out, stream = project.root / "r.json", project.root / "r.jsonl"
    env = {"FARM_RETRY_ATTEMPTS": "1"}
    result = farm(project, "test", "-i", str(suite), "-o", str(out), "--timeout", "1s", "--runs", "2", env=env)
    assert result.exit_code == 1, result.output
    report = read_report(out)
    got = {r["id"]: list(r["failure_classes"]) for r in report["results"]}
    assert got == {
        "infra-down": ["infra:connect"], "infra-e500": ["infra:5xx"], "infra-r429": ["infra:429"],
        "infra-quota": ["infra:quota"], "infra-slow": ["infra:timeout"], "infra-broken": ["harness:parse"],
        "infra-e401": ["harness:config"], "contains": ["assertion:contains"],
        "json-path": ["assertion:json_path:$.need_search"], "equivocal": ["judge:equivocal"],
        "judge-down": ["judge:error"], "hook": ["harness:config"],
    }
    classes = report["summary"]["failure_classes"]
    assert classes["harness:config"]["count"] == 4 and classes["infra:5xx"]["count"] == 2
    assert classes["harness:config"]["example"] == {
        "case_id": "infra-e401", "run": 1, "turn": 1,
        "message": "connector local.e401: HTTP 401: {\"error\": {\"message\": \"injected error\"}}"}
    hook = result_of(report, "hook")["failure_classes"]["harness:config"]["example"]
    assert hook["message"] == "before hook agents.py:Before failed: OSError: db down"
    assert "failures by class:" in result.output and "infra:quota" in result.output
    farm(project, "test", "-i", str(suite), "-o", str(stream), "-k", "contains", env=env)
    [line] = [json.loads(x) for x in stream.read_text().splitlines() if '"result"' in x]
    assert (line["failure_class"], line["failed_turn"]) == ("assertion:contains", 1)


def test_an_agent_that_raises_is_crashed(tmp_path: Path, server: Any) -> None:
    project = make_project(tmp_path, server.url)
    (project.root / "crash.py").write_text(AGENT)
    suite = project.suite([{"id": "boom", "input": "hi"}])
    out = project.root / "r.json"
    assert farm(project, "test", "-i", str(suite), "-n", f"py:{project.root}/crash.py:crash", "-o",
                str(out)).exit_code == 1
    [detail] = result_of(read_report(out), "boom")["run_details"]
    assert (detail["failure_class"], detail["failed_turn"]) == ("crashed", 1)


def test_a_neuro_san_stock_test_is_classed_by_test_and_key(tmp_path: Path, server: Any) -> None:
    project = make_project(tmp_path, server.url)
    suite = project.agent_dir / "tests" / "beatles.hocon"
    suite.write_text('interactions = [{text = "hello"}, {text = "Who did Yellow Submarine?", '
                     'response { text { keywords = Beatles } }}]\n')
    out = project.root / "r.json"
    assert farm(project, "test", "-i", str(suite), "-o", str(out)).exit_code == 1
    [detail] = read_report(out)["results"][0]["run_details"]
    assert (detail["failure_class"], detail["failed_turn"]) == ("assertion:keywords:text", 2)
