"""Yao dynamic cases end to end (SPEC 14.1): the real CLI, a prompt agent behind the bundled
OpenAI-compatible server on 127.0.0.1, scripted and LLM simulators, checkpoints in the reports.

The agent under test repeats what the user says, so every transcript is known in advance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from farm.models import SweepReport
from farm.reports import parse_json_report
from tests.support.formats_fixtures import Project, farm, make_project, read_report, result_of
from tests.support.servers import openai_server

COFFEE = [{"id": "greet", "assert": {"type": "contains", "value": "hello"}},
          {"id": "order", "after": ["greet"], "assert": {"type": "regex", "value": "(?i)latte"}},
          {"id": "size", "after": ["order"], "assert": {"type": "contains", "value": "medium"}}]


@pytest.fixture(scope="module")
def server() -> Any:
    with openai_server() as served:
        yield served


@pytest.fixture
def project(tmp_path: Path, server: Any) -> Project:
    return make_project(tmp_path, server.url)


def transcript(detail: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(t["turn"], t["input"], t["output"], tuple(t["checkpoints_reached"])) for t in detail["turns"]]


def test_scripted_simulator_gives_the_same_transcript_in_50_of_50_runs(project: Project) -> None:
    suite = project.suite([{"id": "coffee", "input": "hello there", "max_turns": 5, "checkpoints": COFFEE,
                            "simulator": {"fixed_responses": ["I want a latte", "A medium one please"]}}])
    out = project.root / "report.json"
    result = farm(project, "test", "-i", str(suite), "--runs", "50", "--parallel", "8", "-o", str(out))
    assert result.exit_code == 0, result.output
    case = result_of(read_report(out), "coffee")
    assert (case["runs"], case["passed"], len(case["run_details"])) == (50, 50, 50)
    expected = [(1, "hello there", "hello there", ("greet",)), (2, "I want a latte", "I want a latte", ("order",)),
                (3, "A medium one please", "A medium one please", ("size",))]
    assert all(transcript(d) == expected for d in case["run_details"])
    assert [(p["id"], p["reached"], p["reach_rate"], p["avg_reached_at_turn"]) for p in case["checkpoints"]] == [
        ("greet", 50, 100.0, 1.0), ("order", 50, 100.0, 2.0), ("size", 50, 100.0, 3.0)]
    assert case["checkpoints"][0]["reach_rate_ci"] == [92.8, 100.0]  # 95 % Wilson, rounded outward
    report = parse_json_report(out.read_text())  # every new model comes back from JSON unchanged
    assert SweepReport.model_validate_json(report.model_dump_json()) == report
    assert report.results[0].run_details[0].checkpoints["size"].reached_at_turn == 3


def test_llm_simulator_plays_the_user_on_a_connector(project: Project, server: Any) -> None:
    connector = project.connector("sim", "echo")
    script = [None, "I want a latte", {"message": "medium, thanks", "goal_achieved": False}]
    suite = project.suite([{"id": "llm-coffee", "input": "hello", "checkpoints": COFFEE,
                            "simulator": {"use": f"llm:{connector}", "options": {"metadata": {
                                "persona": "A regular", "goal": "Order a medium latte", "script": script}}}}])
    out = project.root / "report.json"
    result = farm(project, "test", "-i", str(suite), "--runs", "3", "-o", str(out))
    assert result.exit_code == 0, result.output
    case = result_of(read_report(out), "llm-coffee")
    assert case["passed"] == 3
    assert [t["input"] for t in case["run_details"][0]["turns"]] == ["hello", "I want a latte", "medium, thanks"]
    asked = [r["body"] for r in server.server.requests if "user simulator" in str(r["body"]["messages"][0])]
    sent = __import__("json").loads(asked[0]["messages"][1]["content"])
    assert (sent["persona"], sent["goal"], sent["turn_number"], sent["max_turns"]) == (
        "A regular", "Order a medium latte", 2, 20)
    assert sent["checkpoints_reached"] == ["greet"] and sent["checkpoints_pending"] == ["order", "size"]
    assert sent["extra"] == {"script": script} and asked[0]["temperature"] == 0.7
    assert sent["conversation"] == [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hello"}]


def test_simulator_opens_the_conversation_when_input_is_empty(project: Project) -> None:
    suite = project.suite([{"id": "open", "input": [], "checkpoints": COFFEE[:1],
                            "simulator": {"fixed_responses": ["hello, a coffee please"]}}])
    out = project.root / "r.json"
    assert farm(project, "test", "-i", str(suite), "-o", str(out)).exit_code == 0
    [detail] = result_of(read_report(out), "open")["run_details"]
    assert transcript(detail) == [(1, "hello, a coffee please", "hello, a coffee please", ("greet",))]


def test_goal_achieved_before_the_checkpoints_fails_on_the_first_unmet_one(project: Project) -> None:
    suite = project.suite([{"id": "early", "input": "hello", "checkpoints": COFFEE, "simulator": {
        "fixed_responses": [{"message": "bye", "goal_achieved": True}]}}])
    out = project.root / "r.json"
    assert farm(project, "test", "-i", str(suite), "-o", str(out)).exit_code == 1
    case = result_of(read_report(out), "early")
    [detail] = case["run_details"]
    # the goal came with the simulator's second message, before the agent's second turn: turn 1 failed
    assert len(detail["turns"]) == 1
    assert (detail["status"], detail["failure_class"], detail["failed_turn"]) == (
        "failed", "assertion:checkpoint:order", 1)
    assert detail["checkpoints"]["greet"] == {"reached": True, "reached_at_turn": 1, "required": True,
                                              "passed": True, "message": ""}
    assert "goal achieved" in detail["failed_checks"][0]["message"]
    assert [(p["id"], p["first_unmet"]) for p in case["checkpoints"]] == [("greet", 0), ("order", 1), ("size", 0)]


def test_max_turns_ends_the_run_as_failed(project: Project) -> None:
    suite = project.suite([{"id": "lost", "input": "hello", "max_turns": 3, "checkpoints": COFFEE,
                            "simulator": {"fixed_responses": ["tea?", "tea!", "tea…"]}}])
    out = project.root / "r.json"
    assert farm(project, "test", "-i", str(suite), "-o", str(out)).exit_code == 1
    [detail] = result_of(read_report(out), "lost")["run_details"]
    assert len(detail["turns"]) == 3 and detail["failure_class"] == "assertion:checkpoint:order"
    assert "max turns (3) exceeded" in detail["failed_checks"][0]["message"]


def test_the_failure_quotes_the_last_attempt_and_names_a_turn_that_was_played(project: Project) -> None:
    suite = project.suite([{"id": "sizes", "input": "hello", "max_turns": 4, "checkpoints": COFFEE,
                            "simulator": {"fixed_responses": ["a latte", "small", "large"]}}])
    out = project.root / "r.json"
    assert farm(project, "test", "-i", str(suite), "-o", str(out)).exit_code == 1
    [detail] = result_of(read_report(out), "sizes")["run_details"]
    assert len(detail["turns"]) == 4 and detail["failed_turn"] == 4
    [failed] = detail["failed_checks"]
    assert "last attempt (turn 4)" in failed["message"] and "large" in failed["message"]
    assert "small" not in failed["message"] and "a latte" not in failed["message"]  # earlier attempts
    assert "a latte" in detail["checkpoints"]["size"]["message"]  # Yao's first failure, kept in the data


def test_optional_checkpoint_does_not_hold_the_run_back(project: Project) -> None:
    points = [COFFEE[0], {"id": "upsell", "required": False, "assert": {"type": "contains", "value": "cake"}}]
    suite = project.suite([{"id": "opt", "input": "hello", "checkpoints": points,
                            "simulator": {"fixed_responses": ["x"]}}])
    out = project.root / "r.json"
    assert farm(project, "test", "-i", str(suite), "-o", str(out), "--runs", "2").exit_code == 0
    case = result_of(read_report(out), "opt")
    assert [(p["id"], p["required"], p["reached"], p["first_unmet"]) for p in case["checkpoints"]] == [
        ("greet", True, 2, 0), ("upsell", False, 0, 0)]
    assert case["checkpoints"][1]["reach_rate_ci"] == [0.0, 65.8]


def test_the_llm_simulators_calls_pass_fleet_control(project: Project, server: Any) -> None:
    """The simulator's connector calls are admitted (and metered) like the agent's: a token budget
    they exhaust stops the sweep (exit 4) although the agent under test uses no tokens itself."""
    connector = project.connector("sim", "echo")
    suite = project.suite([{"id": "budgeted", "input": "hello", "checkpoints": COFFEE, "max_turns": 5,
                            "simulator": {"use": f"llm:{connector}", "options": {"metadata": {
                                "script": [None, "I want a latte", "medium please"]}}}}])
    echo = project.root / "echo.py"  # an agent under test that makes no metered call of its own
    echo.write_text("def echo(messages, context):\n    return messages[-1]['content']\n")
    out = project.root / "report.json"
    result = farm(project, "test", "-i", str(suite), "-n", f"py:{echo}:echo", "--runs", "20", "--parallel", "1",
                  "--max-tokens", "30", "-o", str(out))
    assert result.exit_code == 4, result.output
    meta = read_report(out)["metadata"]
    assert (meta["stopped"], meta["status"]) == ("budget", "stopped")


def test_simulator_override_from_the_command_line(project: Project) -> None:
    connector = project.connector("sim", "echo")
    suite = project.suite([{"id": "c", "input": "hello", "checkpoints": COFFEE,
                            "simulator": {"fixed_responses": ["nothing useful"], "options": {"metadata": {
                                "script": [None, "a latte", "medium"]}}}}])
    out = project.root / "r.json"
    result = farm(project, "test", "-i", str(suite), "-o", str(out), "--simulator", f"llm:{connector}")
    assert result.exit_code == 0, result.output
    [detail] = result_of(read_report(out), "c")["run_details"]
    assert [t["input"] for t in detail["turns"]] == ["hello", "a latte", "medium"]


def test_an_unknown_simulator_agent_is_refused_before_any_run(project: Project) -> None:
    suite = project.suite([{"id": "c", "input": "hi", "checkpoints": COFFEE, "simulator": {"use": "tests.nobody"}}])
    result = farm(project, "test", "-i", str(suite))
    assert result.exit_code == 2
    assert f"{suite}:1: simulator: simulator tests.nobody: agent 'tests.nobody' not found" in result.output


def test_an_agent_simulator_gets_yaos_input_as_one_user_message(project: Project) -> None:
    sim = project.root / "sim.py"
    sim.write_text("import json\n"
                   "def play(messages, context):\n"
                   "    asked = json.loads(messages[-1]['content'])\n"
                   "    assert len(messages) == 1 and context.metadata == {'test_mode': 'simulator'}\n"
                   "    said = 'medium latte, turn %d of %d' % (asked['turn_number'], asked['max_turns'])\n"
                   "    return {'message': said, 'goal_achieved': False}\n")
    suite = project.suite([{"id": "agent-sim", "input": "hello", "max_turns": 4, "checkpoints": COFFEE[:3],
                            "simulator": {"use": f"py:{sim}:play"}}])
    out = project.root / "r.json"
    assert farm(project, "test", "-i", str(suite), "-o", str(out)).exit_code == 0
    [detail] = result_of(read_report(out), "agent-sim")["run_details"]
    assert [t["input"] for t in detail["turns"]] == ["hello", "medium latte, turn 2 of 4"]


TRAPS: list[tuple[str, dict[str, Any], str, str]] = [
    # (trap, case fields, default verdict, --yao-compat verdict); verdicts: "load: <text>" or "<status> <class>"
    ("checkpoint written with assertion",
     {"checkpoints": [{"id": "c", "assertion": {"type": "contains", "value": "never"}}]},
     "load: checkpoints[0].assertion: Yao's code reads 'assert'", "passed -"),
    ("checkpoint without assert",
     {"checkpoints": [{"id": "c"}]},
     "load: checkpoints[0].assert: missing: Yao reaches a checkpoint without assert at once", "passed -"),
    ("after names no checkpoint",
     {"checkpoints": [{"id": "c", "after": ["nowhere"], "assert": {"type": "contains", "value": "hello"}}]},
     "load: checkpoints[0].after: 'nowhere' names no checkpoint of this case", "passed -"),
    ("simulator answers input instead of message",
     {"checkpoints": [{"id": "c", "assert": {"type": "contains", "value": "never"}}],
      "simulator": {"use": "llm:local.sim", "options": {"metadata": {"script": [None, {"input": "x"}]}}}},
     "error harness:parse simulator error: the simulator's JSON answer has no non-empty 'message' (it has 'input'",
     "error harness:parse simulator error: simulator returned empty message"),
    ("simulator without checkpoints",
     {"simulator": {"fixed_responses": ["x"]}},
     "load: checkpoints: missing: a dynamic case needs both simulator and checkpoints", "passed -"),
    ("max_turns of zero",
     {"max_turns": 0, "checkpoints": [{"id": "c", "assert": {"type": "contains", "value": "never"}}]},
     "load: max_turns: must be at least 1, got 0", "failed assertion:checkpoint:c max turns (20) exceeded"),
    ("assert beside a simulator",
     {"assert": {"type": "contains", "value": "never"}, "checkpoints": [{"id": "c", "assert": {
         "type": "contains", "value": "hello"}}]},
     "load: assert: a dynamic case is judged by its checkpoints", "passed -"),
]


def _verdict(project: Project, fields: dict[str, Any], *flags: str) -> str:
    case = {"id": "trap", "input": "hello", "simulator": {"fixed_responses": ["more"] * 30}, **fields}
    suite = project.suite([case])
    out = project.root / "trap.json"
    result = farm(project, "test", "-i", str(suite), "-o", str(out), *flags)
    if result.exit_code == 2:
        return f"load: {result.output.strip()}"
    [detail] = result_of(read_report(out), "trap")["run_details"]
    why = detail["error"] or (detail["failed_checks"][0]["message"] if detail["failed_checks"] else "")
    return f"{detail['status']} {detail['failure_class'] or '-'} {why}"


@pytest.mark.parametrize(("trap", "fields", "default", "compat"), TRAPS, ids=[t[0] for t in TRAPS])
def test_every_documented_trap_gives_its_verdict_in_both_modes(
    project: Project, trap: str, fields: dict[str, Any], default: str, compat: str
) -> None:
    project.connector("sim", "echo")
    got_default = _verdict(project, fields)
    got_compat = _verdict(project, fields, "--yao-compat")
    expected_default = default.replace("load: ", f"load: farm: error: {project.agent_dir}/tests/cases.jsonl:1: ")
    assert got_default.startswith(expected_default), got_default
    assert got_compat.startswith(compat), got_compat
