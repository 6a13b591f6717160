"""Failure classes (SPEC 14.2): the rules on hand-made runs, then every class made for real by a
sweep against the bundled OpenAI-compatible server (faults injected by model name), a closed port,
python agents and hooks; counts and examples per case and per sweep in JSON and JSONL.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from farm.agents.faults import status_fault
from farm.agents.retry import TransientError, call_with_retries
from farm.cli.console import FailureDigest
from farm.errors import AgentError, FaultKind
from farm.models import Case, CheckOutcome, ErrorInfo, Message, RunResult, RunStatus, Turn
from farm.models.failure_class import classify_check, classify_error, classify_run
from farm.stats import CaseAccumulator, CasePlan
from tests.support.formats_fixtures import Project, farm, make_project, read_report, result_of
from tests.support.servers import free_port, openai_server


def agent_error(kind: str | None, message: str = "connector x: something failed") -> ErrorInfo:
    return ErrorInfo(type="AgentError", message=message, kind=kind)


@pytest.mark.parametrize(("error", "expected"), [
    (ErrorInfo(type="Timeout", message="run timed out after 1s"), "timeout"),
    (agent_error("connect"), "infra:connect"),
    (agent_error("5xx"), "infra:5xx"),
    (agent_error("429"), "infra:429"),
    (agent_error("quota"), "infra:quota"),
    (agent_error("timeout"), "infra:timeout"),
    (agent_error("parse"), "harness:parse"),
    (agent_error("config"), "harness:config"),
    (agent_error("crashed"), "crashed"),
    (agent_error(None, "connector x: HTTP 503: quota, rate limit, refused"), "crashed"),  # the message is not read
    (agent_error("a-kind-from-a-newer-worker"), "crashed"),
    (ErrorInfo(type="ValueError", message="the agent's own bug"), "crashed"),
    (ErrorInfo(type="HookError", message="before hook env.Before failed"), "harness:config"),
    (ErrorInfo(type="SimulatorReplyError", message="simulator error: empty"), "harness:parse"),
    (ErrorInfo(type="AgentResolutionError", message="simulator x: not found"), "harness:config"),
    (ErrorInfo(type="AgentBuildError", message="cannot build agent 'a' on worker w"), "harness:config"),
    (ErrorInfo(type="crashed", message="worker died twice"), "crashed"),
])
def test_errors_are_classed_by_type_then_by_the_kind_of_their_fault(error: ErrorInfo, expected: str) -> None:
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
    (CheckOutcome(name="agent", passed=False, verdict="error", reason="judge error: refused"), "judge:error"),
    (CheckOutcome(name="text.gist", passed=False, verdict=None, message="no judge is configured"), "judge:error"),
    (CheckOutcome(name="script", passed=False, message="script s:f raised KeyError: 'x'"), "harness:config"),
])
def test_failed_checks_are_classed_by_type_and_path(check: CheckOutcome, expected: str) -> None:
    assert classify_check(check) == expected


QUOTA_BODY = '{"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}'


@pytest.mark.parametrize(("status", "body", "transient", "kind"), [
    (500, "oops", False, FaultKind.SERVER), (503, "busy", True, FaultKind.SERVER),
    (429, "slow down", True, FaultKind.RATE_LIMIT), (429, QUOTA_BODY, True, FaultKind.QUOTA),
    (401, "bad key", False, FaultKind.AUTH), (403, "forbidden", False, FaultKind.AUTH),
    (404, "no such route", False, FaultKind.CONFIG),
])
def test_the_transports_fault_mapping_gives_every_status_its_kind(status: int, body: str, transient: bool,
                                                                    kind: FaultKind) -> None:
    fault = status_fault(status, {}, body, "connector x")
    assert isinstance(fault, TransientError if transient else AgentError)
    assert fault.kind is kind


def test_a_transient_fault_keeps_its_kind_when_the_retries_run_out() -> None:
    async def busy() -> None:
        raise TransientError("connector x: HTTP 503: busy", kind=FaultKind.SERVER)

    with pytest.raises(AgentError) as raised:
        asyncio.run(call_with_retries(busy, conversation=None, attempts=2, base_delay=0.0))
    assert (raised.value.kind, raised.value.retries) == (FaultKind.SERVER, 1)


def test_the_first_failed_check_decides_and_gives_the_turn() -> None:
    checks = [CheckOutcome(name="contains", passed=True, turn=1), CheckOutcome(name="text.value", passed=False, turn=2),
              CheckOutcome(name="regex", passed=False, turn=3)]
    run = RunResult(case_id="c", run=1, status=RunStatus.FAILED, checks=checks, turns_completed=3)
    assert classify_run(run) == ("assertion:value:text", 2)
    assert classify_run(run.model_copy(update={"status": RunStatus.PASSED})) == (None, None)
    errored = RunResult(case_id="c", run=1, status=RunStatus.ERROR, turns_completed=1,
                        error=agent_error("5xx", "HTTP 502: bad gateway"))
    assert classify_run(errored) == ("infra:5xx", 2)
    assert classify_run(errored, current_turn=1) == ("infra:5xx", 1)


def test_every_failure_reason_carries_its_class() -> None:
    case = Case(id="c", format="yao", turns=[Turn(messages=[Message(content="hi")])])
    acc = CaseAccumulator(case, CasePlan(runs=3, required=3))
    both = [CheckOutcome(name="contains", passed=False, expected="yes"),
            CheckOutcome(name="json_path", passed=False, expected={"path": "$.a", "value": 1})]
    acc.add(RunResult(case_id="c", run=1, status=RunStatus.FAILED, checks=both, turns_completed=1))
    acc.add(RunResult(case_id="c", run=2, status=RunStatus.FAILED, checks=both[:1], turns_completed=1))
    acc.add(RunResult(case_id="c", run=3, status=RunStatus.ERROR, error=agent_error("429", "x: HTTP 429: slow")))
    reasons = [(r.reason, r.count, r.failure_class) for r in acc.stats().failure_reasons]
    assert reasons == [("contains: expected 'yes'", 2, "assertion:contains"),
                       ("json_path: expected {\"path\":\"$.a\",\"value\":1}", 1, "assertion:json_path:$.a"),
                       ("error: AgentError: x: HTTP 429: slow", 1, "infra:429")]


def test_verbose_names_each_distinct_failures_class(tmp_path: Path) -> None:
    out = io.StringIO()
    digest = FailureDigest(Console(file=out, width=200))
    for run in (1, 2):
        digest.on_result(RunResult(case_id="c", run=run, status=RunStatus.ERROR,
                                   error=agent_error("connect", "x: connection failed")))
    digest.show()
    assert "2 runs failed: error: AgentError: x: connection failed  [infra:connect]" in out.getvalue()


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
    # No quota model here: an exhausted quota stops the whole sweep (exit 5), see the test below.
    models = {"down": None, "e500": "error-500", "r429": "fail-429x9-then-ok",
              "slow": "slow-3s", "broken": "malformed-json", "e401": "error-401"}
    for name, model in models.items():
        if model:
            project.connector(name, model)
    (project.root / "connectors" / "local" / "down.conn.yao").write_text(json.dumps(
        {"type": "openai", "options": {"model": "echo", "host": f"http://127.0.0.1:{free_port()}"}}))
    (project.agent_dir / "tests" / "agents.py").write_text(AGENT)
    # Only the slow model gets a short timeout: under load even a refused connection can take a second.
    cases = [{"id": f"infra-{name}", "input": "hello", "options": {"connector": f"local.{name}"},
              **({"timeout": "1s"} if name == "slow" else {})} for name in models]
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
    result = farm(project, "test", "-i", str(suite), "-o", str(out), "--runs", "2", env=env)
    assert result.exit_code == 1, result.output
    report = read_report(out)
    got = {r["id"]: list(r["failure_classes"]) for r in report["results"]}
    assert got == {
        "infra-down": ["infra:connect"], "infra-e500": ["infra:5xx"], "infra-r429": ["infra:429"],
        "infra-slow": ["timeout"], "infra-broken": ["harness:parse"],
        "infra-e401": ["harness:config"], "contains": ["assertion:contains"],
        "json-path": ["assertion:json_path:$.need_search"], "equivocal": ["judge:equivocal"],
        "judge-down": ["judge:error"], "hook": ["harness:config"],
    }
    classes = report["summary"]["failure_classes"]
    assert classes["harness:config"]["count"] == 4 and classes["infra:5xx"]["count"] == 2
    assert classes["harness:config"]["example"] == {
        "case_id": "infra-e401", "run": 1, "turn": 1,
        "message": "connector local.e401: HTTP 401: {\"error\": {\"message\": \"injected error\"}}"}
    [down] = result_of(report, "judge-down")["run_details"][0]["failed_checks"]
    assert down["verdict"] == "error" and down["message"].startswith("the judge could not be asked: judge error: ")
    [unsure] = result_of(report, "equivocal")["run_details"][0]["failed_checks"]
    assert unsure["verdict"] == "equivocal" and unsure["message"].startswith("the judge equivocated: ")
    hook = result_of(report, "hook")["failure_classes"]["harness:config"]["example"]
    assert hook["message"] == "before hook agents.py:Before failed: OSError: db down"
    assert "failures by class:" in result.output and "timeout" in result.output
    farm(project, "test", "-i", str(suite), "-o", str(stream), "-k", "contains", env=env)
    [line] = [json.loads(x) for x in stream.read_text().splitlines() if '"result"' in x]
    assert (line["failure_class"], line["failed_turn"]) == ("assertion:contains", 1)


def test_an_exhausted_quota_stops_the_sweep_instead_of_failing_runs(tmp_path: Path, server: Any) -> None:
    project = make_project(tmp_path, server.url)
    project.connector("quota", "quota")
    suite = project.suite([{"id": f"q{i}", "input": "hello", "options": {"connector": "local.quota"}}
                           for i in range(3)])
    out = project.root / "r.json"
    result = farm(project, "test", "-i", str(suite), "-o", str(out), "--runs", "2", "--parallel", "1",
                  env={"FARM_RETRY_ATTEMPTS": "1"})
    assert result.exit_code == 5, result.output
    report = read_report(out)
    assert report["metadata"]["stopped"] == "quota" and "quota is exhausted" in report["metadata"]["reason"]
    assert report["metadata"]["not_run"] == ["q0", "q1", "q2"]  # the call that met the quota is not counted


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
