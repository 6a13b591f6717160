"""Trajectories (SPEC 21): an agent whose tool calls are fixed by the run index
(``tests/agents/paths.py``) gives exact pass counts for every match mode and the other trajectory
checks, exact ``trajectories`` / ``trajectory_consistency`` / ``divergence``, and each run's calls
in its details, in process, from both suite formats; bad shapes exit 2 naming file, line and key."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from farm.agents.prompt import manifest_tools
from farm.checks.spec import parse_assertions, parse_response
from farm.errors import AgentResolutionError
from farm.models import Case, Message, RunResult, RunStatus, ToolCall, Turn
from farm.stats import CaseAccumulator, plan_case
from farm.stats.path_change import PathCount, path_p_value, paths_of
from farm.stats.trajectory import MAX_DETAIL_CALLS, MAX_PATH_STEPS, MAX_RUN_CALLS, divergence, recorded_calls
from tests.support.browser_fixtures import Opened, headless_chromium
from tests.support.servers import HOST, load_example, openai_server, serve_in_thread

AGENT = "py:tests/agents/paths.py:respond"
PATH = ["search", "fetch", "answer"]

CHECKS: dict[str, tuple[dict[str, Any], int]] = {
    # case id: (assertion, passing runs of 10) -- see the table in tests/agents/paths.py
    "strict": ({"type": "trajectory", "value": {"tools": PATH, "match": "strict"}}, 4),
    "in_order": ({"type": "trajectory", "value": {"tools": PATH, "match": "in_order"}}, 5),
    "unordered": ({"type": "trajectory", "value": {"tools": PATH, "match": "unordered"}}, 5),
    "subset": ({"type": "trajectory", "value": {"tools": PATH, "match": "subset"}}, 9),
    "superset": ({"type": "trajectory", "value": {"tools": PATH, "match": "superset"}}, 6),
    "in_order_args": ({"type": "trajectory", "value": {
        "tools": [{"name": "search", "arguments": {"q": "rome"}}, "answer"], "match": "in_order"}}, 8),
    "one_fetch": ({"type": "tool_count", "value": {"tool": "fetch", "min": 1, "max": 1}}, 5),
    "at_most_3": ({"type": "tool_count", "value": {"tool": "*", "max": 3}}, 9),
    "no_delete": ({"type": "not_tool_called", "value": "delete"}, 9),
    "two_steps": ({"type": "max_steps", "value": 2}, 3),
    "never": ({"type": "tool_count", "value": {"tool": "refund", "min": 1}}, 0),
}


def _sweep(farm_cli: Any, tmp_path: Path, suite: Path, agent: str = AGENT, *outs: str) -> dict[str, Any]:
    args = ["test", "-i", str(suite), "-n", agent, "--runs", "10", "--no-progress", "--no-history",
            "-o", str(tmp_path / "r.json")]
    for out in outs:
        args += ["-o", str(tmp_path / out)]
    done = farm_cli.run(*args, local=True)
    assert done.returncode == 1, done.stderr
    return {case["id"]: case for case in json.loads((tmp_path / "r.json").read_text())["results"]}


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> tuple[dict[str, Any], Path]:
    from tests.support.processes import FarmCli

    tmp_path = tmp_path_factory.mktemp("paths")
    suite = tmp_path / "paths.jsonl"
    suite.write_text("".join(json.dumps({"id": case, "input": "go", "assert": [check]}) + "\n"
                             for case, (check, _n) in CHECKS.items()))
    return _sweep(FarmCli(redis_server), tmp_path, suite, AGENT, "r.md", "r.xml", "r.html", "r.jsonl"), tmp_path


def test_every_mode_and_check_passes_exactly_the_runs_it_should(swept: tuple[dict[str, Any], Path]) -> None:
    results, _ = swept
    assert {case: results[case]["passed"] for case in CHECKS} == {case: n for case, (_c, n) in CHECKS.items()}
    strict = results["strict"]
    assert strict["criteria"][0]["criterion"] == "trajectory strict search → fetch → answer"
    assert (strict["criteria"][0]["passed"], strict["criteria"][0]["runs"]) == (4, 10)
    assert set(strict["failure_classes"]) == {"assertion:trajectory"}
    assert set(results["one_fetch"]["failure_classes"]) == {"assertion:tool_count"}
    assert set(results["no_delete"]["failure_classes"]) == {"assertion:not_tool_called"}
    assert set(results["two_steps"]["failure_classes"]) == {"assertion:max_steps"}


def test_a_failure_shows_the_expected_and_the_actual_path(swept: tuple[dict[str, Any], Path]) -> None:
    results, _ = swept
    details = {d["run"]: d for d in results["strict"]["run_details"]}
    (check,) = details[7]["failed_checks"]
    assert check["message"] == ("expected path [search → fetch → answer] (strict), "
                                "actual path [fetch → search → answer]")
    assert [c["name"] for c in details[7]["trajectory"]] == ["fetch", "search", "answer"]
    assert details[6]["trajectory"][0] == {"name": "search", "arguments": {"q": "paris"}, "result": None,
                                           "error": None}  # results are not kept (the agent's business)
    assert details[9].get("trajectory") is None  # no call: the empty path
    (deleted,) = {d["run"]: d for d in results["no_delete"]["run_details"]}[10]["failed_checks"]
    assert deleted["message"] == "delete was called at step 2 (actual path [search → delete → answer])"


def test_paths_consistency_and_divergence_are_exact(swept: tuple[dict[str, Any], Path]) -> None:
    results, _ = swept
    strict = results["strict"]
    assert [(p["path"], p["count"], p["share"], p["passed"]) for p in strict["trajectories"]] == [
        (PATH, 4, 0.4, 4), (["search", "answer"], 2, 0.2, 0), ([], 1, 0.1, 0),
        (["fetch", "search", "answer"], 1, 0.1, 0), (["search", "delete", "answer"], 1, 0.1, 0),
        (["search", "fetch", "fetch", "answer"], 1, 0.1, 0)]
    assert strict["trajectory_consistency"] == 0.4
    # failing runs leave search → fetch → answer at step 1 (runs 7, 9), 2 (5, 6, 10) and 3 (8)
    assert strict["divergence"] == {"step": 2, "count": 3, "path": PATH}
    # no run passed: the reference is the most common path, and its own runs do not diverge
    assert results["never"]["divergence"] == {"step": 2, "count": 3, "path": PATH}
    # the reference is the most common *passing* path: search → answer passes once by arguments
    subset = results["subset"]  # only run 10 fails: it leaves at step 2
    assert subset["divergence"] == {"step": 2, "count": 1, "path": PATH}


def test_divergence_prefers_the_most_common_passing_path() -> None:
    paths = {("a", "b"): (5, 0), ("a", "c"): (3, 3), ("d",): (2, 0)}
    found = divergence(paths)
    assert found is not None and (found.step, found.count, found.path) == (2, 5, ["a", "c"])
    assert divergence({("a",): (3, 3)}) is None  # nothing fails


def test_a_check_sees_the_calls_of_every_turn_so_far(farm_cli: Any, tmp_path: Path) -> None:
    suite = tmp_path / "turns.hocon"  # turn 1 makes the first call, turn 2 the rest
    suite.write_text('{"agent": "paths", "interactions": [{"text": "one", "response": {"max_steps": 1}}, '
                     '{"text": "two", "response": {"trajectory": {"tools": ["search", "fetch", "answer"]}}}]}')
    (case,) = _sweep(farm_cli, tmp_path, suite, "py:tests/agents/paths.py:respond_turns").values()
    assert case["passed"] == 4
    assert [(c["id"], c["passed"]) for c in case["criteria"]] == [("1.1", 10), ("2.1", 4)]


def test_hocon_response_blocks_take_the_same_checks(farm_cli: Any, tmp_path: Path) -> None:
    suite = tmp_path / "paths.hocon"
    suite.write_text('{"agent": "paths", "interactions": [{"text": "go", "response": {'
                     '"trajectory": {"tools": ["search", "answer"], "match": "in_order"}, '
                     '"max_steps": 3, "text": {"keywords": "done"}}}]}')
    (case,) = _sweep(farm_cli, tmp_path, suite).values()
    assert case["passed"] == 8  # in_order search → answer: all but runs 9 (no call) and 8 (4 steps)
    assert [c["criterion"] for c in case["criteria"]] == [
        "trajectory in_order search → answer", "max_steps 3", "text keywords done"]


@pytest.mark.parametrize(("value", "key", "message"), [
    ({"tools": ["a"], "match": "in-order"}, "assert[0].value.match", "did you mean 'in_order'?"),
    ({"tools": "a"}, "assert[0].value.tools", "missing: the expected calls"),
    ({"tools": [], "match": "superset"}, "assert[0].value.tools", "superset would pass whatever"),
    ({"tools": [{"nam": "a"}]}, "assert[0].value.tools[0].nam", "unknown key"),
    (["a", "b"], "assert[0].value", "must be an object"),
])
def test_bad_trajectory_values_name_their_key(value: Any, key: str, message: str) -> None:
    _assertions, issues = parse_assertions([{"type": "trajectory", "value": value}])
    assert any(where == key and message in said for where, said in issues), issues


@pytest.mark.parametrize(("check", "key", "message"), [
    ({"type": "tool_count", "value": {"tool": "a"}}, "assert[0].value", "give min, max or both"),
    ({"type": "tool_count", "value": {"tool": "a", "min": 3, "max": 1}}, "assert[0].value", "above max"),
    ({"type": "tool_count", "value": {"tool": "a", "min": -1}}, "assert[0].value.min", "whole number"),
    ({"type": "max_steps", "value": True}, "assert[0].value", "whole number"),
    ({"type": "not_tool_called", "value": []}, "assert[0].value", "names no tool"),
    ({"type": "max_steps"}, "assert[0].value", "missing"),
])
def test_bad_counts_name_their_key(check: dict[str, Any], key: str, message: str) -> None:
    _assertions, issues = parse_assertions([check])
    assert any(where == key and message in said for where, said in issues), issues


def test_bad_hocon_tool_checks_name_their_key() -> None:
    _tests, issues = parse_response({"max_step": 2, "tool_count": {"tool": "a", "max": "3"}}, "r")
    assert ("r.max_step", "unknown key (expected one of: text, sly_data, structure, trajectory, tool_count, "
            "not_tool_called, max_steps) (did you mean 'max_steps'?)") in issues
    assert any(where == "r.tool_count.max" for where, _said in issues)


def test_a_bad_shape_exits_2_naming_file_line_and_key(farm_cli: Any, tmp_path: Path) -> None:
    suite = tmp_path / "bad.jsonl"
    good = {"id": "ok", "input": "go", "assert": [{"type": "max_steps", "value": 2}]}
    bad = {"id": "bad", "input": "go", "assert": [{"type": "trajectory", "value": {"tools": ["a"], "match": "any"}}]}
    suite.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    done = farm_cli.run("test", "-i", str(suite), "-n", AGENT, "--no-progress", "--no-history", local=True)
    assert done.returncode == 2, done.stderr
    assert f"{suite}:2" in done.stderr and "assert[0].value.match" in done.stderr
def test_every_report_format_shows_the_paths(swept: tuple[dict[str, Any], Path]) -> None:
    _, tmp_path = swept
    markdown = (tmp_path / "r.md").read_text()
    assert "| search → fetch → answer | 4 | 40.0% | 4 |" in markdown
    assert "Trajectory consistency: 0.4" in markdown
    assert "Divergence: step 2 (3 failing runs leave search → fetch → answer)" in markdown
    assert "- Run 7 (failed, " in markdown
    assert " · assertion:trajectory, turn 1 · path fetch → search → answer" in markdown
    case = next(c for c in ET.parse(tmp_path / "r.xml").getroot().iter("testcase") if c.get("name") == "strict")
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["trajectory_consistency"] == "0.4"
    assert properties["divergence_step"] == "2"
    assert properties["trajectory_1"] == "search → fetch → answer: 4 (4 passed)"
    html = (tmp_path / "r.html").read_text()
    assert '"trajectory_consistency":0.4' in html and "function trajectoriesBlock" in html
    events = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    strict = next(e for e in events if e["type"] == "stability" and e.get("id", e.get("case")) == "strict")
    assert strict["trajectory_consistency"] == 0.4 and strict["divergence"]["step"] == 2




@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as launched:
        yield launched


@pytest.mark.browser
def test_the_html_report_shows_the_paths_as_a_table(swept: tuple[dict[str, Any], Path], browser: Any) -> None:
    _, tmp_path = swept
    opened = Opened(browser, tmp_path / "r.html")
    try:
        page = opened.page
        page.locator("tr.case-row", has_text="unordered").click()
        box = page.locator("tr.detail-row .trajectories")
        assert box.locator(".note").inner_text() == (
            "Trajectory consistency: 0.4 · Divergence: step 2 (3 failing runs leave search → fetch → answer)")
        rows = [r.locator("td").all_inner_texts() for r in box.locator("tbody tr").all()]
        assert rows[:3] == [["search → fetch → answer", "4", "40%", "4"], ["search → answer", "2", "20%", "0"],
                            ["(no tool call)", "1", "10%", "0"]]
        paths = page.locator("tr.detail-row .run-path").all_inner_texts()
        assert "path search → fetch → answer" in paths and "path fetch → search → answer" in paths
        assert opened.problems == [] and opened.blocked == []
    finally:
        opened.context.close()


def test_a_prompt_agent_passes_its_connectors_tool_calls_through(farm_cli: Any, tmp_path: Path) -> None:
    """The bundled OpenAI-compatible server calls the offered tool the user message names
    (``examples/servers/openai_server.py``): package.yao's ``tools`` are offered, the calls of both
    turns make the run's trajectory."""
    agent = tmp_path / "assistants" / "tooly"
    agent.mkdir(parents=True)
    tools = [{"name": "weather", "parameters": {"type": "object"}},
             {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    (agent / "package.yao").write_text(json.dumps({"name": "tooly", "connector": "local.echo", "tools": tools}))
    connector = tmp_path / "connectors" / "local" / "echo.conn.yao"
    connector.parent.mkdir(parents=True)
    suite = tmp_path / "tools.hocon"
    suite.write_text(json.dumps({"agent": "tooly", "interactions": [
        {"text": "weather in Oslo?", "response": {"max_steps": 1}},
        {"text": "now search the web", "response": {
            "trajectory": {"tools": [{"name": "weather", "arguments": {"input": "regex:Oslo"}}, "search"]},
            "not_tool_called": "delete"}}]}))
    with openai_server() as served:
        connector.write_text(json.dumps({"type": "openai", "options": {"model": "echo", "host": served.url + "/v1"}}))
        done = farm_cli.run("test", "-i", str(suite), "-n", "tooly", "--runs", "3", "--no-progress", "--no-history",
                            "-o", str(tmp_path / "r.json"), local=True,
                            env={"FARM_AGENTS_ROOT": str(tmp_path / "assistants"),
                                 "FARM_CONNECTORS_ROOT": str(tmp_path / "connectors")})
        offered = [r["body"].get("tools") for r in served.server.requests]
    assert done.returncode == 0, done.stderr
    assert offered[0] == [{"type": "function", "function": tools[0]}, tools[1]]
    (case,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert case["passed"] == 3
    assert case["trajectories"] == [{"path": ["weather", "search"], "count": 3, "share": 1.0, "passed": 3}]
    assert case["trajectory_consistency"] == 1.0 and case["divergence"] is None
    first = case["run_details"][0]["trajectory"]
    assert [(c["name"], c["arguments"]) for c in first] == [("weather", {"input": "weather in Oslo?"}),
                                                            ("search", {"input": "now search the web"})]


@pytest.mark.parametrize(("tools", "message"), [
    ("weather", "expected a list of tools, got str"),
    ([{"description": "no name"}], "tools[0]: expected {name, description, parameters} with a name"),
])
def test_bad_manifest_tools_are_refused(tools: Any, message: str) -> None:
    with pytest.raises(AgentResolutionError, match=re.escape(message)):
        manifest_tools(tools, "package.yao: tools")


def test_workers_count_the_same_paths(tmp_path: Path, farm_worker: Any, farm_cli: Any, counting_agent: Any) -> None:
    """A distributed sweep: the calls cross the queue in each result, the figures are the same."""
    farm_worker(queue="paths")
    agent = counting_agent(AGENT.removeprefix("py:"))
    suite = tmp_path / "paths.jsonl"
    suite.write_text("".join(json.dumps({"id": case, "input": "go", "assert": [CHECKS[case][0]]}) + "\n"
                             for case in ("strict", "subset", "two_steps")))
    done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "10", "--no-progress", "--no-history",
                        "-o", str(tmp_path / "remote.json"), "--broker", farm_cli.broker, "--queue", "paths")
    assert done.returncode == 1, done.stderr
    results = {c["id"]: c for c in json.loads((tmp_path / "remote.json").read_text())["results"]}
    assert {case: results[case]["passed"] for case in results} == {"strict": 4, "subset": 9, "two_steps": 3}
    assert results["strict"]["trajectory_consistency"] == 0.4
    assert results["strict"]["divergence"] == {"step": 2, "count": 3, "path": PATH}
    assert results["strict"]["trajectories"][1] == {"path": ["search", "answer"], "count": 2, "share": 0.2,
                                                    "passed": 0}
    agent.assert_once_each(30)


def test_a_secret_in_tool_arguments_is_masked(farm_cli: Any, tmp_path: Path) -> None:
    secret = "sk-live-5ec12e7-path"
    suite = tmp_path / "leak.hocon"
    suite.write_text('{ interactions: [ { text = "key is "${?API_KEY}" ok", response { max_steps = 0 } } ] }\n')
    done = farm_cli.run("test", "-i", str(suite), "-n", "py:tests/agents/paths.py:echo_tool", "--runs", "2",
                        "--no-progress", "--no-history", "-o", str(tmp_path / "r.json"),
                        "-o", str(tmp_path / "r.jsonl"), local=True, env={"API_KEY": secret})
    assert done.returncode == 1, done.stderr
    texts = [(tmp_path / name).read_text() for name in ("r.json", "r.jsonl")] + [done.stdout, done.stderr]
    assert all(secret not in text for text in texts)
    (case,) = json.loads(texts[0])["results"]
    assert case["run_details"][0]["trajectory"] == [{"name": "lookup", "arguments": {"said": "key is *** ok"},
                                                     "result": None, "error": "key is *** ok"}]


def test_the_tool_using_example_passes_its_trajectory_checks(farm_cli: Any, tmp_path: Path) -> None:
    """``examples/tools`` as the README runs it, its connector pointed at a server on a free port."""
    example = tmp_path / "tools"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "tools", example)
    connector = example / "connectors" / "local" / "concierge.conn.yao"
    with openai_server(key="demo-key") as served:
        connector.write_text(connector.read_text().replace("http://127.0.0.1:8001", served.url))
        done = farm_cli.run("test", "-i", str(example / "assistants/concierge/tests/inputs.jsonl"), "--runs", "3",
                            "--no-progress", "--no-history", "-o", str(tmp_path / "r.json"), local=True,
                            env={"EXAMPLE_LLM_KEY": "demo-key", "FARM_AGENTS_ROOT": str(example / "assistants"),
                                 "FARM_CONNECTORS_ROOT": str(example / "connectors")})
    assert done.returncode == 0, done.stderr
    results = {c["id"]: c for c in json.loads((tmp_path / "r.json").read_text())["results"]}
    assert {case: [p["path"] for p in c["trajectories"]] for case, c in results.items()} == {
        "forecast": [["weather"]], "lookup": [["search"]], "small-talk": []}  # no run of it called a tool
    assert [(c["passed"], c["trajectory_consistency"]) for c in results.values()] == [(3, 1.0), (3, 1.0), (3, None)]
    assert [k["kind"] for k in results["forecast"]["criteria"]] == ["trajectory", "not_tool_called", "max_steps"]


def test_compare_flags_paths_that_moved_and_not_paths_that_stayed(farm_cli: Any, tmp_path: Path) -> None:
    suite = tmp_path / "paths.jsonl"
    suite.write_text(json.dumps({"id": "any", "input": "go", "assert": [CHECKS["subset"][0]]}) + "\n")

    def sweep(agent: str, name: str) -> Path:
        done = farm_cli.run("test", "-i", str(suite), "-n", f"py:tests/agents/paths.py:{agent}", "--runs", "40",
                            "--no-progress", "--no-history", "-o", str(tmp_path / name), local=True)
        assert done.returncode in (0, 1), done.stderr
        return tmp_path / name

    base, again, shifted = sweep("respond", "base.json"), sweep("respond", "again.json"), sweep("respond_shifted",
                                                                                                "shifted.json")
    moved = farm_cli.run("compare", str(base), str(shifted), "-o", str(tmp_path / "cmp.json"), local=True)
    (row,) = json.loads((tmp_path / "cmp.json").read_text())["cases"]
    assert row["path_changed"] is True and row["path_q_value"] < 0.001
    assert row["path_grew"] == {"path": ["search", "delete", "answer"], "base_share": 0.1, "head_share": 0.6}
    assert "path changed: search → delete → answer 10 % → 60 % of runs" in moved.stdout, moved.stdout
    stayed = farm_cli.run("compare", str(base), str(again), "-o", str(tmp_path / "same.json"), local=True)
    (row,) = json.loads((tmp_path / "same.json").read_text())["cases"]
    assert (row["path_changed"], row["path_q_value"], row["path_grew"]) == (False, 1.0, None)
    assert "path changed" not in stayed.stdout


def test_few_runs_take_the_seeded_permutation_test() -> None:
    same = [PathCount(path=["a"], count=6), PathCount(path=["b"], count=4)]
    moved = [PathCount(path=["c"], count=9), PathCount(path=["a"], count=1)]
    assert path_p_value(same, same) == 1.0
    p = path_p_value(same, moved)
    assert p is not None and p < 0.01 and p == path_p_value(same, moved)  # seeded: the same every time
    assert path_p_value(same, []) is None
    assert paths_of([], 5) == [PathCount(path=[], count=5)]  # no run called a tool: all on the empty path


def test_assess_without_a_judge_tells_failures_apart_by_path(swept: tuple[dict[str, Any], Path],
                                                              farm_cli: Any) -> None:
    _, tmp_path = swept
    done = farm_cli.run("assess", str(tmp_path / "r.json"), "--no-memory", "-o", str(tmp_path / "assess.json"),
                        local=True)
    assert done.returncode in (0, 1), done.stderr
    cases = {c["id"]: c for c in json.loads((tmp_path / "assess.json").read_text())["cases"]}
    # max_steps 2 failed runs 1-4 and 7, 8, 10: one class, four paths
    assert [(m["mode"], m["count"]) for m in cases["two_steps"]["modes"]] == [
        ("assertion:max_steps via search → fetch → answer", 4),
        ("assertion:max_steps via fetch → search → answer", 1),
        ("assertion:max_steps via search → fetch → fetch → answer", 1),
        ("assertion:max_steps via search → delete → answer", 1)]
    # not_tool_called delete failed one run: one path, the class alone names it
    assert [m["mode"] for m in cases["no_delete"]["modes"]] == ["assertion:not_tool_called"]
    assert cases["no_delete"]["modes"][0]["examples"][0]["path"] == ["search", "delete", "answer"]


def test_history_keeps_the_paths_for_compare_and_trends(farm_cli: Any, tmp_path: Path,
                                                         sqlite_history_url: str) -> None:
    suite = tmp_path / "paths.jsonl"
    suite.write_text(json.dumps({"id": "any", "input": "go", "assert": [CHECKS["subset"][0]]}) + "\n")
    for agent in ("respond", "respond_shifted"):
        done = farm_cli.run("test", "-i", str(suite), "-n", f"py:tests/agents/paths.py:{agent}", "--runs", "40",
                            "--no-progress", "--history", sqlite_history_url, local=True)
        assert done.returncode in (0, 1), done.stderr
    compared = farm_cli.run("compare", "last~1", "last", "--history", sqlite_history_url, "-o",
                            str(tmp_path / "cmp.json"), local=True)
    (row,) = json.loads((tmp_path / "cmp.json").read_text())["cases"]
    assert row["path_changed"] is True and row["path_grew"]["path"] == ["search", "delete", "answer"]
    assert "path changed: search → delete → answer 10 % → 60 % of runs" in compared.stdout
    trend = json.loads(farm_cli.run("history", "--history", sqlite_history_url, "--json", local=True).stdout)
    assert [p["trajectory_consistency"] for p in trend["cases"][0]["points"]] == [0.4, 0.6]


def test_a_neuro_san_case_that_checks_tool_calls_asks_for_them(farm_cli: Any, tmp_path: Path) -> None:
    """No chat_filter given: a case with a trajectory check is sent MAXIMAL, the filter neuro-san
    sends its calls with (the example server's echo calls its repeater tool)."""
    suite = tmp_path / "echo.hocon"
    suite.write_text('{"agent": "echo", "interactions": [{"text": "hi", "response": {"text": {"keywords": "hi"}}}, '
                     '{"text": "again", "response": {"trajectory": {"tools": ["repeater", "repeater"]}}}]}')
    with serve_in_thread(load_example("neuro_san_server").NeuroSanServer((HOST, 0))) as served:
        done = farm_cli.run("test", "-i", str(suite), "--server", served.url, "--runs", "2", "--no-progress",
                            "--no-history", "-o", str(tmp_path / "r.json"), local=True)
        sent = [r["body"].get("chat_filter") for r in served.server.requests]
    assert done.returncode == 0, done.stderr
    assert sent == [{"chat_filter_type": "MAXIMAL"}] * 4
    (case,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert case["trajectories"] == [{"path": ["repeater", "repeater"], "count": 2, "share": 1.0, "passed": 2}]


def test_a_long_trajectory_is_bounded_in_the_details_and_counted_whole() -> None:
    case = Case(id="long", format="yao", turns=[Turn(messages=[Message(content="go")])])
    accumulator = CaseAccumulator(case, plan_case(case, 2, 1.0))
    many = [ToolCall(name=f"t{i}", arguments={"blob": "x" * 5000}) for i in range(MAX_RUN_CALLS + 10)]
    for run in (1, 2):
        accumulator.add(RunResult(case_id="long", run=run, status=RunStatus.PASSED, trajectory=recorded_calls(many)))
    stats = accumulator.stats()
    (detail, _) = stats.run_details
    assert detail.trajectory is not None and len(detail.trajectory) == MAX_DETAIL_CALLS
    assert str(detail.trajectory[0].arguments).endswith("[truncated, 5012 chars]")
    kept = recorded_calls(many)
    assert kept is not None and kept[-1].arguments is None  # past MAX_RUN_CALLS: the name alone
    assert len(stats.trajectories[0].path) == MAX_PATH_STEPS + 1 and stats.trajectories[0].path[-1] == "…"
    assert (stats.trajectories[0].count, stats.trajectory_consistency) == (2, 1.0)
