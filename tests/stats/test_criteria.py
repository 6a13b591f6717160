"""The per-criterion scorecard (SPEC 17): a case with three assertions met 10/10, 7/10 and 4/10
shows exactly those in every format, in process and on real workers, in the history, in ``farm
compare`` and in ``farm history`` (which criterion moved)."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select

from farm.history.tables import case_criteria
from farm.models import Assertion, Case, CheckOutcome, Message, RunResult, RunStatus, StockTest, Turn
from farm.reports.summary import render_summary
from farm.stats import CaseAccumulator, plan_case
from farm.stats.criteria import criterion_text
from farm.sweep.replay import report_from_journal
from tests.support.browser_fixtures import Opened, headless_chromium
from tests.support.history_fixtures import take_inbox

AGENT = "py:tests/agents/scorecard.py:respond"
CASE = {"id": "three", "input": "where?", "assert": [
    {"type": "contains", "value": "hello"},
    {"type": "json_path", "path": "$.city", "value": "Rome"},
    {"type": "contains", "value": "bye"},
]}
EXPECTED = [("1.1", "contains hello", "contains", 10, 10, 100.0, "stable"),
            ("1.2", "json_path $.city == Rome", "json_path", 10, 7, 70.0, "flaky"),
            ("1.3", "contains bye", "contains", 10, 4, 40.0, "flaky")]
LINE = "2 of 3 criteria failing: json_path $.city == Rome 7/10, contains bye 4/10"


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "scorecard.jsonl"
    suite.write_text(json.dumps(CASE) + "\n", encoding="utf-8")
    return suite


def _criteria(report_path: Path) -> list[tuple[Any, ...]]:
    case = json.loads(report_path.read_text(encoding="utf-8"))["results"][0]
    return [(c["id"], c["criterion"], c["kind"], c["runs"], c["passed"], c["pass_rate"], c["label"])
            for c in case["criteria"]]


def _sweep(farm_cli: Any, tmp_path: Path, history: str, *outs: str, bye_runs: int = 4) -> Any:
    args = ["test", "-i", str(_suite(tmp_path)), "-n", AGENT, "--runs", "10", "--no-progress",
            "--history", history]
    for out in outs:
        args += ["-o", str(tmp_path / out)]
    done = farm_cli.run(*args, local=True, env={"SCORECARD_BYE_RUNS": str(bye_runs)})
    assert done.returncode == 1, done.stderr
    return done


def test_every_format_shows_each_criterion(tmp_path: Path, farm_cli: Any, sqlite_history_url: str) -> None:
    done = _sweep(farm_cli, tmp_path, sqlite_history_url, "r.json", "r.md", "r.xml", "r.html", "r.jsonl")
    assert f"  three: {LINE}" in done.stderr.splitlines()
    assert _criteria(tmp_path / "r.json") == EXPECTED
    events = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    (stability,) = [e for e in events if e["type"] == "stability"]
    assert [(c["id"], c["passed"], c["runs"]) for c in stability["criteria"]] == [(i, p, n) for i, _t, _k, n, p, _r, _l
                                                                                  in EXPECTED]
    ci = json.loads((tmp_path / "r.json").read_text())["results"][0]["criteria"][1]["pass_rate_ci"]
    assert ci == [39.6, 89.3]
    markdown = (tmp_path / "r.md").read_text()
    assert LINE.replace("_", "\\_") in markdown
    assert "| 1.2 | json\\_path $.city == Rome | json\\_path | 7/10 | 70.0% | 39.6–89.3% | flaky |" in markdown
    assert "| 1.3 | contains bye | contains | 4/10 | 40.0% | 16.8–68.8% | flaky |" in markdown
    assert "| 1.1 | contains hello | contains | 10/10 | 100.0% | 72.2–100.0% | stable |" in markdown
    failure = ET.parse(tmp_path / "r.xml").getroot().find(".//testcase/failure")
    assert failure is not None and LINE in failure.get("message", "")
    html = (tmp_path / "r.html").read_text()
    assert '"criterion":"json_path $.city == Rome"' in html and '"passed":7' in html
    journal = next((Path(os.environ["FARM_DATA_DIR"]) / "journals").glob("*.jsonl"))
    report = report_from_journal(journal)
    assert f"  three: {LINE}" in render_summary(report).splitlines()


def test_history_compare_and_trends_name_the_criterion_that_moved(
        tmp_path: Path, farm_cli: Any, history_url: str) -> None:
    _sweep(farm_cli, tmp_path, history_url, "base.json")
    _sweep(farm_cli, tmp_path, history_url, "head.json", bye_runs=9)
    take_inbox(history_url)
    engine = create_engine(history_url)
    try:
        with engine.connect() as conn:
            recorded = conn.execute(select(case_criteria.c.sweep, case_criteria.c.criterion_id, case_criteria.c.passed,
                                           case_criteria.c.runs, case_criteria.c.label)).all()
    finally:
        engine.dispose()
    first = min(row.sweep for row in recorded)
    in_history = sorted(tuple(r)[1:] for r in recorded if r.sweep == first)
    assert in_history == [(i, p, n, label) for i, _t, _k, n, p, _r, label in EXPECTED]
    moved = "criterion moved: contains bye 4/10 → 9/10 (+50 points)"
    compared = farm_cli.run("compare", "last~1", "last", "--history", history_url, "-o",
                            str(tmp_path / "cmp.json"), "-o", str(tmp_path / "cmp.md"), local=True)
    assert moved in compared.stdout, compared.stdout + compared.stderr
    document = json.loads((tmp_path / "cmp.json").read_text())
    assert [(m["id"], m["base"], m["head"], m["delta"], m["base_label"], m["head_label"])
            for m in document["cases"][0]["criteria_moved"]] == [("1.3", "4/10", "9/10", 50.0, "flaky", "flaky")]
    assert moved in (tmp_path / "cmp.md").read_text()
    from_files = farm_cli.run("compare", str(tmp_path / "base.json"), str(tmp_path / "head.json"), local=True)
    assert moved in from_files.stdout
    history = farm_cli.run("history", "--history", history_url, local=True)
    assert f"  three: {moved}" in history.stdout.splitlines(), history.stdout
    trend = json.loads(farm_cli.run("history", "--history", history_url, "--json", local=True).stdout)
    assert [m["criterion"] for m in trend["cases"][0]["criteria_moved"]] == ["contains bye"]


def test_workers_count_the_same_criteria(tmp_path: Path, farm_worker: Any, farm_cli: Any,
                                         counting_agent: Any) -> None:
    farm_worker(queue="criteria")
    agent = counting_agent(AGENT.removeprefix("py:"))
    done = farm_cli.run("test", "-i", str(_suite(tmp_path)), "-n", agent.ref, "--runs", "10", "--no-progress",
                        "--no-history", "-o", str(tmp_path / "remote.json"), "--broker", farm_cli.broker,
                        "--queue", "criteria")
    assert done.returncode == 1, done.stderr
    assert _criteria(tmp_path / "remote.json") == EXPECTED
    assert f"  three: {LINE}" in done.stderr.splitlines()
    agent.assert_once_each(json.loads((tmp_path / "remote.json").read_text())["summary"]["total_runs"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as launched:
        yield launched


@pytest.mark.browser
def test_html_report_shows_the_scorecard(tmp_path: Path, farm_cli: Any, browser: Any) -> None:
    done = farm_cli.run("test", "-i", str(_suite(tmp_path)), "-n", AGENT, "--runs", "10", "--no-progress",
                        "--no-history", "-o", str(tmp_path / "r.html"), local=True)
    assert done.returncode == 1, done.stderr
    opened = Opened(browser, tmp_path / "r.html")
    try:
        page = opened.page
        page.locator("tr.case-row", has_text="three").click()
        box = page.locator("tr.detail-row .criteria")
        assert box.locator(".criteria-failing").inner_text() == LINE
        rows = [r.locator("td").all_inner_texts() for r in box.locator("tbody tr").all()]
        assert [(r[0], r[1], r[3], r[6]) for r in rows] == [(i, text, f"{p}/{n}", label)
                                                             for i, text, _k, n, p, _r, label in EXPECTED]
        assert opened.problems == [] and opened.blocked == []
    finally:
        opened.context.close()


def _turn(*assertions: Assertion, stock: tuple[StockTest, ...] = ()) -> Turn:
    return Turn(messages=[Message(role="user", content="hi")], assertions=list(assertions), stock_tests=list(stock))


def test_a_criterion_counts_only_the_runs_that_reached_its_turn() -> None:
    """Run 1 passes both turns, run 2 fails turn 2's check, run 3 errors in turn 2 (never answered
    it), run 4 is skipped: turn 1's check has 3 runs, turn 2's has 2."""
    case = Case(id="two", format="neuro-san", turns=[
        _turn(Assertion(type="contains", value="a", has_value=True)),
        _turn(stock=(StockTest(target="structure", key=["answer"], test="value", values=[42]),)),
    ])
    acc = CaseAccumulator(case, plan_case(case, 4, 1.0))

    def result(run: int, status: RunStatus, completed: int, met: list[tuple[int, bool]]) -> RunResult:
        return RunResult(case_id="two", run=run, status=status, turns_completed=completed,
                         checks=[CheckOutcome(name="x", passed=p, turn=t) for t, p in met])

    acc.add(result(1, RunStatus.PASSED, 2, [(1, True), (2, True)]))
    acc.add(result(2, RunStatus.FAILED, 2, [(1, True), (2, False)]))
    acc.add(result(3, RunStatus.ERROR, 1, [(1, True)]))
    acc.add(result(4, RunStatus.SKIPPED, 0, []))
    figures = [(c.id, c.criterion, c.kind, c.turn, c.runs, c.passed, c.label) for c in acc.stats().criteria]
    assert figures == [("1.1", "contains a", "contains", 1, 3, 3, "stable"),
                       ("2.1", "structure.answer value 42", "value", 2, 2, 1, "flaky")]


def test_criterion_text_says_what_is_checked() -> None:
    assert criterion_text(Assertion(type="contains", value="bye", has_value=True, negate=True)) == "not contains bye"
    assert criterion_text(Assertion(type="json_path", path="$.n", value=3, has_value=True)) == "json_path $.n == 3"
    assert criterion_text(Assertion(type="script", script="checks.py:ok")) == "script checks.py:ok"
    assert criterion_text(StockTest(target="text", test="keywords", values=["a", "b"])) == "text keywords a b"
    long = criterion_text(Assertion(type="equals", value="x" * 200, has_value=True))
    assert len(long) == len("equals ") + 60 and long.endswith("…")
    assert re.fullmatch(r"agent .+", criterion_text(Assertion(type="agent", value="is polite", has_value=True)))


@pytest.mark.browser
def test_compare_and_trend_pages_name_the_criterion_that_moved(
        tmp_path: Path, farm_cli: Any, sqlite_history_url: str, browser: Any) -> None:
    _sweep(farm_cli, tmp_path, sqlite_history_url, "base.json")
    _sweep(farm_cli, tmp_path, sqlite_history_url, "head.json", bye_runs=9)
    farm_cli.run("compare", str(tmp_path / "base.json"), str(tmp_path / "head.json"), "-o", str(tmp_path / "cmp.html"),
                 local=True)
    trend = farm_cli.run("history", "--history", sqlite_history_url, "--html", str(tmp_path / "trend.html"),
                         local=True)
    assert trend.returncode == 0, trend.stderr
    for page_file in ("cmp.html", "trend.html"):
        opened = Opened(browser, tmp_path / page_file)
        try:
            shown = opened.page.get_by_text("criterion moved: contains bye 4/10 → 9/10 (+50 points)")
            assert shown.count() == 1, page_file
            assert opened.problems == [] and opened.blocked == []
        finally:
            opened.context.close()
