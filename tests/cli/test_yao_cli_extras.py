"""Yao's command-line extras on ``farm test``: --run, --ctx, --collect-only, --dry-run, --before/--after, per-case
hooks and options, notes for skipped files. Real CLI in this process, a real python agent that
writes down what it was given, and the bundled OpenAI-compatible server where a prompt agent runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.formats_fixtures import Project, farm, farm_process, make_project, read_report, result_of
from tests.support.servers import openai_server

RECORDER = '''
import json, os

LOG = os.path.join(os.path.dirname(__file__), "calls.jsonl")


def _log(**entry):
    with open(LOG, "a") as handle:
        handle.write(json.dumps(entry, default=str) + "\\n")


def respond(messages, context):
    _log(kind="agent", content=messages[-1].get("content"), user=context.user_id, team=context.team_id,
         locale=context.locale, chat=context.chat_id, metadata=context.metadata, options=context.options,
         authorized=context.authorized)
    return "hello " + str(messages[-1].get("content"))


def before(context, case):
    _log(kind="before", case=case.id, run=context.run)
    return {"token": case.id + "-" + str(context.run)}


def after(context, case, result, data):
    _log(kind="after", case=case.id, status=result.status.value, data=data)


def before_all(context, cases):
    _log(kind="before_all", cases=[c.id for c in cases], user=context.user_id)
    return len(cases)


def after_all(context, report, data):
    _log(kind="after_all", data=data, passed=report.summary.passed_cases)


def failing_after_all(context, report, data):
    raise RuntimeError("cleanup went wrong")
'''


@pytest.fixture(scope="module")
def server() -> Any:
    with openai_server() as served:
        yield served


@pytest.fixture
def project(tmp_path: Path, server: Any) -> Project:
    project = make_project(tmp_path, server.url)
    (project.root / "recorder.py").write_text(RECORDER)
    return project


def calls(project: Project, kind: str) -> list[dict[str, Any]]:
    path = project.root / "calls.jsonl"
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["kind"] == kind] if path.exists() else []


AGENT = "py:recorder.py:respond"


def test_run_filters_by_regular_expression(project: Project) -> None:
    suite = project.suite([{"id": i, "input": i} for i in ("TestSystemReady", "TestSystemError", "TestOther")])
    out = project.root / "r.json"
    assert farm(project, "test", "-i", str(suite), "-n", AGENT, "--run", "System(Ready|Err)", "-o",
                str(out)).exit_code == 0
    assert [r["id"] for r in read_report(out)["results"]] == ["TestSystemReady", "TestSystemError"]
    bad = farm(project, "test", "-i", str(suite), "-n", AGENT, "--run", "(")
    assert bad.exit_code == 2 and "--run '(': not a regular expression" in bad.output
    none = farm(project, "test", "-i", str(suite), "-n", AGENT, "--run", "^Nothing")
    assert none.exit_code == 2 and "--run '^Nothing': no case id matches" in none.output


def test_ctx_file_gives_every_call_its_context_and_flags_win(project: Project) -> None:
    (project.root / "context.json").write_text(json.dumps({
        "chat_id": "test-chat-001", "locale": "zh-cn",
        "authorized": {"user_id": "ctx-user", "team_id": "ctx-team", "constraints": {"owner_only": True}},
        "metadata": {"mode": "test", "shared": 1}}))
    suite = project.suite([{"id": "a", "input": "x", "metadata": {"shared": 2}},
                           {"id": "b", "input": "y", "user": "case-user"}])
    result = farm(project, "test", "-i", str(suite), "-n", AGENT, "--ctx", "context.json", "-t", "flag-team",
                  "--runs", "2", "--parallel", "1")
    assert result.exit_code == 0, result.output
    seen = {(c["content"], c["chat"]): c for c in calls(project, "agent")}
    first = seen[("x", "test-chat-001")]
    assert (first["user"], first["team"], first["locale"]) == ("ctx-user", "flag-team", "zh-cn")
    assert first["metadata"] == {"mode": "test", "shared": 2}
    assert first["authorized"]["constraints"] == {"owner_only": True}
    assert ("x", "test-chat-001-run2") in seen and seen[("y", "test-chat-001")]["user"] == "case-user"


def test_a_bad_ctx_file_is_refused(project: Project) -> None:
    (project.root / "context.json").write_text(json.dumps({"chatid": "x"}))
    suite = project.suite([{"id": "a", "input": "x"}])
    result = farm(project, "test", "-i", str(suite), "-n", AGENT, "--ctx", "context.json")
    assert result.exit_code == 2
    assert "context.json: chatid: unknown key (expected one of: chat_id, authorized" in result.output


def test_dry_run_lists_what_would_run_and_calls_no_agent(project: Project) -> None:
    suite = project.suite([{"id": "a", "input": "x"}, {"id": "dyn", "input": "hi", "simulator": {
        "fixed_responses": ["ok"]}, "checkpoints": [{"id": "c", "assert": {"type": "contains", "value": "x"}}]}])
    result = farm(project, "test", "-i", str(suite), "-n", AGENT, "--dry-run", "--runs", "3")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert [(e["id"], e["runs"], e["agent"]) for e in lines] == [("a", 3, AGENT), ("dyn", 3, AGENT)]
    assert lines[1]["dynamic"] == {"simulator": "fixed_responses", "checkpoints": ["c"], "max_turns": 20}
    assert calls(project, "agent") == []


@pytest.mark.slow  # starts a farm process, a server or an agent program
def test_collect_only_lists_ids_and_count_and_calls_no_agent(project: Project) -> None:
    suite = project.suite([{"id": "a", "input": "x"}, {"id": "b", "input": "y"},
                           {"id": "c", "input": "z"}])
    result = farm_process(project, "test", "-i", str(suite), "-n", AGENT, "--collect-only", "--runs", "2",
                          "-k", "a", "-k", "b", "-k", "c")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["a", "b", "c"]
    assert "collected 3 cases (6 runs)" in result.stderr
    assert calls(project, "agent") == [] and not list(project.root.rglob("output-*.jsonl"))


@pytest.mark.slow  # starts a farm process, a server or an agent program
def test_a_listing_longer_than_one_write_keeps_every_line_in_order(project: Project) -> None:
    # The listing is written LINES_PER_WRITE lines at a time: the chunks' edges lose or repeat nothing.
    from farm.cli.extras import LINES_PER_WRITE

    count = LINES_PER_WRITE * 2 + 3
    suite = project.suite([{"id": f"c{i:05d}", "input": "x"} for i in range(count)])
    listed = farm_process(project, "test", "-i", str(suite), "-n", AGENT, "--collect-only")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [f"c{i:05d}" for i in range(count)]
    dry = farm_process(project, "test", "-i", str(suite), "-n", AGENT, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert [json.loads(line)["id"] for line in dry.stdout.splitlines()] == [f"c{i:05d}" for i in range(count)]


def test_collect_only_exits_2_on_bad_input_as_a_sweep_would(project: Project) -> None:
    suite = project.suite([{"id": "a", "input": "x"}, {"id": "b", "input": "y", "asert": []}])
    result = farm(project, "test", "-i", str(suite), "-n", AGENT, "--collect-only")
    assert result.exit_code == 2 and "asert: unknown key" in result.output
    missing = farm(project, "test", "-i", str(suite), "-n", "py:nowhere.py:respond", "--collect-only")
    assert missing.exit_code == 2
    none = farm(project, "test", "-i", str(suite), "-n", AGENT, "--collect-only", "-k", "zzz")
    assert none.exit_code == 2 and calls(project, "agent") == []


def test_case_hooks_run_around_every_run_and_pass_their_data(project: Project) -> None:
    (project.agent_dir / "tests" / "recorder.py").write_text(RECORDER)
    suite = project.suite([{"id": "hooked", "input": "x", "before": "recorder.py:before",
                            "after": "recorder:after"}])
    result = farm(project, "test", "-i", str(suite), "-n", AGENT, "--runs", "2", "--parallel", "1")
    assert result.exit_code == 0, result.output
    log = project.agent_dir / "tests" / "calls.jsonl"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["kind"], e.get("run") or e.get("data")) for e in entries] == [
        ("before", 1), ("after", {"token": "hooked-1"}), ("before", 2), ("after", {"token": "hooked-2"})]


def test_global_hooks_run_once_around_the_sweep(project: Project) -> None:
    suite = project.suite([{"id": "a", "input": "x"}, {"id": "b", "input": "y"}])
    result = farm(project, "test", "-i", str(suite), "-n", AGENT, "--before", "recorder.py:before_all",
                  "--after", "recorder.py:after_all", "-u", "ci-user")
    assert result.exit_code == 0, result.output
    assert calls(project, "before_all") == [{"kind": "before_all", "cases": ["a", "b"], "user": "ci-user"}]
    assert calls(project, "after_all") == [{"kind": "after_all", "data": 2, "passed": 2}]
    warned = farm(project, "test", "-i", str(suite), "-n", AGENT, "--after", "recorder.py:failing_after_all")
    assert warned.exit_code == 0
    assert "farm: warning: --after recorder.py:failing_after_all failed: RuntimeError: cleanup went wrong" in \
        warned.output
    missing = farm(project, "test", "-i", str(suite), "-n", AGENT, "--before", "recorder.py:nope")
    assert missing.exit_code == 2 and "--before recorder.py:nope: 'recorder.py:nope': recorder.py has no " \
                                      "attribute 'nope'" in missing.output


def test_case_options_reach_the_agent_and_pick_a_prompt_agents_connector(project: Project, server: Any) -> None:
    project.connector("other", "echo-other")
    suite = project.suite([{"id": "opts", "input": "x", "options": {"mode": "task", "metadata": {"k": 1}}},
                           {"id": "conn", "input": "hi", "options": {"connector": "local.other"}}])
    assert farm(project, "test", "-i", str(suite), "-n", AGENT, "-k", "opts").exit_code == 0
    assert calls(project, "agent")[0]["options"] == {"mode": "task", "metadata": {"k": 1}}
    assert farm(project, "test", "-i", str(suite), "-k", "conn").exit_code == 0
    assert server.server.requests[-1]["body"]["model"] == "echo-other"
    assert farm(project, "test", "-i", str(suite), "-k", "conn", "-c", "local.echo").exit_code == 0
    assert server.server.requests[-1]["body"]["model"] == "echo"  # -c wins, as in Yao


def test_notes_tell_what_a_directory_sweep_skipped(project: Project) -> None:
    tests = project.agent_dir / "tests"
    (tests / "case.hocon").write_text("connections = [direct, grpc]\ninteractions = [{text = hi}]\n")
    (tests / "case.initial_memory.hocon").write_text("memory = {}\n")
    out = project.root / "r.json"
    result = farm(project, "test", "-i", str(tests), "-n", AGENT, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert f"farm: note: {tests}/case.initial_memory.hocon: skipped: not a test case (no interactions)" in \
        result.output
    # -n names an agent that is no neuro-san server: the file's connections do not apply, it runs once
    assert "farm: note: " in result.output and "connections (direct, grpc) do not apply to -n" in result.output
    report = read_report(out)
    assert len(report["metadata"]["notes"]) == 2 and result_of(report, "case")["passed"] == 1
