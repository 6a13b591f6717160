"""``farm assess`` (SPEC 14.3) with a judge behind the bundled OpenAI-compatible server.

The agent under test is a python agent whose answer depends on the run number, so each case has
known distinct failures; the server names modes deterministically (``examples/servers``), and
counts every call it gets, so "one judge call per distinct failure" is measured, not assumed.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from farm.assess import InMemoryModes, JsonFileModes, default_modes_path, read_answer
from farm.extras import install_hint
from farm.history.modes import HistoryModes
from farm.semantic import missing_requirement
from tests.support.browser_fixtures import Opened, headless_chromium
from tests.support.formats_fixtures import Project, farm, farm_process, make_project
from tests.support.servers import openai_server

AGENT = '''
def respond(messages, context):
    if context.run == 4:
        raise RuntimeError("database is down")
    return {1: "wrong A", 2: "wrong A", 3: "wrong B", 5: "right"}.get(context.run, "right")
'''
FLAKY_GROUPS = 2 if missing_requirement() is None else 3
"""flaky's failures: "wrong A" (2 runs) and "wrong B" mean the same (one group with the [semantic]
extra, two without), and the error."""
NEEDS_SEMANTIC = pytest.mark.skipif(
    missing_requirement() is not None,
    reason=f"needs the [semantic] extra ({missing_requirement()} is missing: {install_hint('semantic')}): "
           "without a judge, only its meanings fold 'wrong A' and 'wrong B' into one failure-class mode")
HOSTILE = "<script>window.__pwned=1</script>"


@pytest.fixture(scope="module")
def server() -> Any:
    with openai_server() as served:
        yield served


@pytest.fixture
def project(tmp_path: Path, server: Any) -> Project:
    project = make_project(tmp_path, server.url)
    project.connector("judge", "echo")
    (project.root / "agent.py").write_text(AGENT)
    project.suite([{"id": "flaky", "input": "hi", "assert": {"type": "contains", "value": "right"}},
                   {"id": "steady", "input": "hi", "assert": {"type": "type", "value": "string"}}])
    return project


def judge_calls(server: Any) -> int:
    return sum("failure mode" in str(r["body"]["messages"][0]["content"]) for r in server.server.requests)


def assess(project: Project, *args: str) -> Any:
    suite = project.agent_dir / "tests" / "cases.jsonl"
    return farm(project, "assess", str(suite), "-n", "py:agent.py:respond", "--runs", "5",
                "--modes", str(project.root / "modes.json"), *args)


NEURO_SAN_LAYOUT = """\
Testing flaky:
1/5 attempts passed.
4/5 attempts failed.
Modes of failure:

3/4 failures (75.00%):
Failure Mode:
Fails as assertion:contains.

    Example 1 (2 runs gave this):
    wrong A

    Example 2:
    wrong B

    Acceptance Criteria:
    contains: right

1/4 failures (25.00%):
Failure Mode:
Fails as crashed.

    Example 1:
    database is down

    Acceptance Criteria:
    the agent answers without error

Testing steady:
4/5 attempts passed.
1/5 attempts failed.
Modes of failure:

1/1 failures (100.00%):
Failure Mode:
Fails as crashed.

    Example 1:
    database is down

    Acceptance Criteria:
    the agent answers without error
"""


def test_modes_with_a_judge_in_neuro_sans_layout_one_call_per_distinct_failure(project: Project,
                                                                               server: Any) -> None:
    before = judge_calls(server)
    result = assess(project, "--judge", "local.judge")
    assert result.exit_code == 0, result.output
    text, new = result.output.split("\nNew failure modes:\n")
    assert text == NEURO_SAN_LAYOUT
    assert new.splitlines() == ["    flaky: Fails as assertion:contains.", "    flaky: Fails as crashed.",
                                "    steady: Fails as crashed."]
    # flaky: wrong A (2 runs), wrong B, the error; steady: the error alone.
    assert judge_calls(server) - before == FLAKY_GROUPS + 1
    assert json.loads((project.root / "modes.json").read_text()) == {
        "flaky": ["Fails as assertion:contains.", "Fails as crashed."], "steady": ["Fails as crashed."]}


def test_reassessing_the_same_failures_gives_the_same_modes_and_nothing_new(project: Project, server: Any) -> None:
    out_first, out_second = project.root / "first.json", project.root / "second.json"
    assert assess(project, "--judge", "local.judge", "-o", str(out_first)).exit_code == 0
    calls = judge_calls(server)
    second = assess(project, "--judge", "local.judge", "-o", str(out_second))
    assert second.exit_code == 0 and "New failure modes" not in second.output
    assert judge_calls(server) - calls == FLAKY_GROUPS + 1  # still one per group, never one per run
    first, again = json.loads(out_first.read_text()), json.loads(out_second.read_text())
    modes = [[(m["mode"], m["count"]) for m in case["modes"]] for case in first["cases"]]
    assert modes == [[(m["mode"], m["count"]) for m in case["modes"]] for case in again["cases"]]
    assert all(m["new"] for m in first["cases"][0]["modes"]) and not any(m["new"] for m in again["cases"][0]["modes"])


def test_json_follows_spec_14_3(project: Project) -> None:
    out = project.root / "assess.json"
    assert assess(project, "--judge", "local.judge", "-o", str(out)).exit_code == 0
    document = json.loads(out.read_text())
    flaky = document["cases"][0]
    assert (flaky["id"], flaky["runs"], flaky["passed"], flaky["judge_calls"]) == ("flaky", 5, 1, FLAKY_GROUPS)
    mode = flaky["modes"][0]
    assert set(mode) >= {"mode", "count", "share", "failure_classes", "examples"}
    assert (mode["count"], mode["share"], mode["failure_classes"]) == (3, 0.75, ["assertion:contains"])
    assert mode["examples"][0] == {"run": 1, "turn": 1, "failure_class": "assertion:contains",
                                   "criteria": "contains: right", "sample": "wrong A", "path": []}
    assert document["judge"] == "local.judge"


@NEEDS_SEMANTIC
def test_without_a_judge_the_modes_are_the_failure_classes(project: Project) -> None:
    report = project.root / "report.json"
    suite = project.agent_dir / "tests" / "cases.jsonl"
    assert farm(project, "test", "-i", str(suite), "-n", "py:agent.py:respond", "--runs", "5", "-o",
                str(report)).exit_code == 1
    markdown = project.root / "assess.md"
    result = farm(project, "assess", str(report), "--no-memory", "-o", str(markdown))
    assert result.exit_code == 0, result.output
    assert "Failure Mode:\nassertion:contains\n" in result.output and "Failure Mode:\ncrashed\n" in result.output
    text = markdown.read_text()
    assert text.startswith("# Failure modes\n\nJudge: none (modes are the failure classes)\n\n## flaky\n")
    assert "### 3/4 failures (75.0%) (new)" in text


def test_a_bad_judge_is_refused_before_anything_runs(project: Project) -> None:
    result = assess(project, "--judge", "local.nobody")
    assert result.exit_code == 2 and "unknown connector 'local.nobody'" in result.output
    assert not (project.root / "modes.json").exists()
    twice = assess(project, "--runs", "50")  # as every farm command: a flag given twice is refused, not "last wins"
    assert twice.exit_code == 2 and "--runs given 2 times" in twice.output


def test_success_ratio_sets_the_runs_of_a_neuro_san_case(project: Project) -> None:
    suite = project.agent_dir / "tests" / "music.hocon"
    suite.write_text('success_ratio = "2/3"\ninteractions = [{text = "hi", response { text { keywords = '
                     'right } }}]\n')
    result = farm(project, "assess", str(suite), "-n", "py:agent.py:respond", "--no-memory")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Testing music:\n0/3 attempts passed.\n3/3 attempts failed.\n")  # runs 1-3


def test_reading_a_judges_answer() -> None:
    modes = ["Answers in the wrong language.", "Leaves out the total."]
    assert read_answer("2", modes) == "Leaves out the total."
    assert read_answer(' "1." ', modes) == "Answers in the wrong language."
    assert read_answer("leaves out the total.", modes) == "Leaves out the total."
    assert read_answer("Mentions a competitor. It also apologises. And more.", modes) == \
        "Mentions a competitor. It also apologises."
    assert read_answer("7", modes) is None and read_answer("  ", modes) is None


def test_mode_memory_in_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "modes.json"
    memory = JsonFileModes(path)
    memory.remember("c", ["a", "b", "a"])
    memory.remember("c", ["b", "c"])
    assert JsonFileModes(path).known("c") == ["a", "b", "c"] and JsonFileModes(path).known("x") == []
    path.write_text("[1]")
    with pytest.raises(Exception, match="not a failure-mode file"):
        JsonFileModes(path)
    scratch = InMemoryModes()
    scratch.remember("c", ["a"])
    assert scratch.known("c") == ["a"]


def test_mode_memory_in_the_history_store(history_url: str) -> None:
    memory = HistoryModes.open(history_url)
    try:
        assert memory.known("c") == []
        memory.remember("c", ["Leaves out the total.", "Answers in French.", "Leaves out the total."])
        memory.remember("c", ["Answers in French.", "Apologises. Then stops."])
        memory.remember("other", ["Answers in French."])
    finally:
        memory.close()
    again = HistoryModes.open(history_url)  # another process, another day: the same list, in order
    try:
        assert again.known("c") == ["Leaves out the total.", "Answers in French.", "Apologises. Then stops."]
        assert again.known("other") == ["Answers in French."] and again.known("nobody") == []
    finally:
        again.close()


def test_two_assessments_remembering_the_same_mode_store_it_once(history_url: str) -> None:
    HistoryModes.open(history_url).close()  # migrated once, before the race
    memories = [HistoryModes.open(history_url) for _ in range(4)]
    barrier = threading.Barrier(len(memories))

    def remember(memory: HistoryModes) -> None:
        barrier.wait()
        memory.remember("c", ["Answers in French.", "Leaves out the total."])

    threads = [threading.Thread(target=remember, args=(m,)) for m in memories]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert memories[0].known("c") == ["Answers in French.", "Leaves out the total."]
    finally:
        for memory in memories:
            memory.close()


def test_with_a_history_the_modes_live_there_and_a_new_mode_is_a_finding(project: Project,
                                                                          sqlite_history_url: str) -> None:
    suite = project.agent_dir / "tests" / "cases.jsonl"

    def assess_with_history(agent: str = "agent.py") -> Any:
        return farm(project, "assess", str(suite), "-n", f"py:{agent}:respond", "--runs", "5", "--judge",
                    "local.judge", "--history", sqlite_history_url)

    first = assess_with_history()
    assert first.exit_code == 0, first.output
    assert "New failure modes:\n    flaky: Fails as assertion:contains." in first.output
    assert not default_modes_path().exists()  # the JSON file is only for a farm without a history
    memory = HistoryModes.open(sqlite_history_url)
    try:
        assert memory.known("flaky") == ["Fails as assertion:contains.", "Fails as crashed."]
    finally:
        memory.close()
    second = assess_with_history()
    assert second.exit_code == 0 and "New failure modes" not in second.output
    (project.root / "changed.py").write_text(AGENT.replace('raise RuntimeError("database is down")', "return 123"))
    third = assess_with_history("changed.py")  # run 4 answers a number: steady fails a way it never did
    assert third.exit_code == 0 and "New failure modes:" in third.output, third.output
    assert third.output.split("New failure modes:\n")[1].splitlines() == ["    steady: Fails as assertion:type."]


@NEEDS_SEMANTIC
def test_without_a_history_the_modes_live_in_the_data_directory(project: Project) -> None:
    suite = project.agent_dir / "tests" / "cases.jsonl"
    result = farm(project, "assess", str(suite), "-n", "py:agent.py:respond", "--runs", "5", "--no-history")
    assert result.exit_code == 0, result.output
    assert default_modes_path().parent == Path(os.environ["FARM_DATA_DIR"])
    assert json.loads(default_modes_path().read_text()) == {"flaky": ["assertion:contains", "crashed"],
                                                            "steady": ["crashed"]}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as launched:
        yield launched


@pytest.mark.browser
def test_the_html_section_in_chromium(project: Project, browser: Any) -> None:
    (project.root / "agent.py").write_text(AGENT.replace('"wrong B"', repr(HOSTILE)))
    out = project.root / "assess.html"
    suite = project.agent_dir / "tests" / "cases.jsonl"
    done = farm_process(project, "assess", str(suite), "-n", "py:agent.py:respond", "--runs", "5", "--judge",
                        "local.judge", "--no-memory", "-o", str(out))
    assert done.returncode == 0, done.stderr
    opened = Opened(browser, out, ready=None)
    page = opened.page
    try:
        section = page.locator("#failure-modes")
        assert section.locator("article.assess-case").count() == 2
        rows = section.locator("article[data-case=flaky] tr.mode-row")
        assert rows.count() == 2 and rows.nth(0).locator(".mode-text").inner_text() == "Fails as assertion:contains."
        assert rows.nth(0).locator("td").nth(1).inner_text() == "3" and rows.nth(0).locator(".badge").count() == 1
        rows.nth(0).locator("summary").click()
        samples = rows.nth(0).locator("pre.val").all_inner_texts()
        assert samples == ["wrong A", "wrong A", HOSTILE]
        assert page.evaluate("window.__pwned") is None and page.locator("script").count() == 0
        assert opened.requests == [opened.url] and opened.blocked == [] and opened.problems == []
    finally:
        opened.context.close()
