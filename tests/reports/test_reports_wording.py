"""Issue 27's minors about what reports say, through the real ``farm`` command (the HTML ones in
headless Chromium): a partial journal flagged with its planned runs, ``farm report`` of a ``-o``
JSONL stream, the terminal table cut to the terminal's width, "1 case", ``--adaptive`` starring
only cases that stopped early.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser_fixtures import headless_chromium
from tests.support.farm_process import farm
from tests.support.servers import ROOT

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - playwright is a dev dependency
    expect = None

AGENT = """
def respond(messages):
    text = messages[-1]["content"]
    if text.startswith("fail"):
        return "this answer goes on and on about something else entirely, never the expected words " * 3
    return text
"""




def project(tmp_path: Path, cases: list[dict[str, Any]]) -> Path:
    (tmp_path / "agent.py").write_text(AGENT)
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return suite


def sweep(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return farm("test", "-i", "suite.jsonl", "-n", "py:agent.py:respond", "--no-progress", "--no-history", *args,
                cwd=tmp_path, env=env)


def partial_journal(tmp_path: Path) -> Path:
    """A journal of a sweep planned at 50 runs a case whose process died after 2 runs of each."""
    project(tmp_path, [{"id": "greets", "input": "hello"}, {"id": "fails", "input": "fail please",
                                                            "assert": {"type": "contains", "value": "hello"}}])
    done = sweep(tmp_path, "--runs", "50", "--parallel", "1", "-o", "r.json", "-v")
    assert done.returncode == 1, done.stderr
    [journal] = (tmp_path / ".farm-data" / "journals").glob("*.jsonl")
    kept, seen = [], {"greets": 0, "fails": 0}
    for line in journal.read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "summary":
            break
        if event["type"] == "result":
            seen[event["id"]] += 1
            if seen[event["id"]] > 2:
                continue
        kept.append(line)
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join(kept) + "\n")
    return partial


def test_a_partial_journal_is_flagged_and_shows_its_planned_runs(tmp_path: Path) -> None:
    journal = partial_journal(tmp_path)
    done = farm("report", str(journal), "-o", "p.json", "-o", "p.md", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    line = next(x for x in done.stderr.splitlines() if "pass rate" in x and "runs:" in x)
    assert line.startswith("PARTIAL (sweep abandoned): ")
    assert "2/50" in done.stderr  # the table's runs column: 2 of the 50 planned
    assert "| greets | 2/50 |" in (tmp_path / "p.md").read_text()


def test_farm_report_renders_a_jsonl_stream(tmp_path: Path) -> None:
    project(tmp_path, [{"id": "greets", "input": "hello"}, {"id": "fails", "input": "fail please",
                                                            "assert": {"type": "contains", "value": "hello"}}])
    assert sweep(tmp_path, "--runs", "3", "-o", "r.jsonl", "-o", "r.json").returncode == 1
    done = farm("report", "r.jsonl", "-o", "again.json", "-o", "again.html", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # the stream's verdict: a case failed
    again, first = (json.loads((tmp_path / n).read_text()) for n in ("again.json", "r.json"))
    assert [(c["id"], c["passed"], c["runs"]) for c in again["results"]] == \
        [(c["id"], c["passed"], c["runs"]) for c in first["results"]]
    assert again["summary"]["total_runs"] == first["summary"]["total_runs"] == 6
    assert again["metadata"]["sweep_id"] == first["metadata"]["sweep_id"]


def test_the_table_fits_the_terminal_and_one_case_is_one_case(tmp_path: Path) -> None:
    long_id = "a-case-whose-id-is-long-enough-to-crowd-the-table-" + "x" * 20
    project(tmp_path, [{"id": long_id, "input": "fail please", "assert": {"type": "contains", "value": "hello"}}])
    done = sweep(tmp_path, "--runs", "2", "-o", "r.json", env={"COLUMNS": "100"})
    assert done.returncode == 1, done.stderr
    table = done.stderr.splitlines()[:2]
    assert table[0].lstrip().startswith("case") and all(len(x) <= 100 for x in table), table
    assert "…" in table[1]
    assert "failed of 1 case;" in done.stderr and "1 cases" not in done.stderr


def test_adaptive_stars_only_cases_that_stopped_early(tmp_path: Path) -> None:
    project(tmp_path, [{"id": "greets", "input": "hello"}])
    done = sweep(tmp_path, "--runs", "5", "--adaptive", "exact", "-o", "r.md", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "100.0%*" not in done.stderr and "biased by stopping" not in done.stderr
    assert "\\*" not in (tmp_path / "r.md").read_text()
    # a case that fails at once stops early: it, and only it, is starred, with the note
    project(tmp_path, [{"id": "greets", "input": "hello"},
                       {"id": "fails", "input": "fail please", "assert": {"type": "contains", "value": "hello"}}])
    done = sweep(tmp_path, "--runs", "20", "--adaptive", "exact", "-o", "r.md", env={"COLUMNS": "200"})
    assert done.returncode == 1, done.stderr
    rows = {line.split()[1]: line for line in done.stderr.splitlines() if line.startswith(("pass ", "FAIL "))}
    assert "0.0%*" in rows["fails"] and "%*" not in rows["greets"], rows
    assert "biased by stopping" in done.stderr
    assert (tmp_path / "r.md").read_text().count("\\*") == 2  # the failing case's rate and the note


# ------------------------------------------------------------------------------------ Chromium


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with headless_chromium() as browser:
        yield browser


def open_html(chromium: Any, path: Path) -> Any:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(path.as_uri())
    page.wait_for_selector("html[data-ready]")
    return page


@pytest.mark.browser
def test_the_html_of_a_partial_journal(chromium: Any, tmp_path: Path) -> None:
    journal = partial_journal(tmp_path)
    farm("report", str(journal), "-o", "p.html", cwd=tmp_path)
    page = open_html(chromium, tmp_path / "p.html")
    expect(page.locator("h1 .pill")).to_have_text("Partial: sweep abandoned")
    row = page.locator("#rows tr.case-row", has_text="greets")
    expect(row).to_contain_text("of 50 planned")
    page.context.close()


@pytest.mark.browser
def test_the_html_cards_say_timeouts_count_runs_made_and_leave_no_card_alone(chromium: Any, tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("import asyncio\n\nasync def respond(messages):\n"
                                       "    if messages[-1]['content'] == 'slow':\n        await asyncio.sleep(60)\n"
                                       "    return 'ok'\n")
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in [
        {"id": "slow", "input": "slow", "timeout": "1s"}, {"id": "fine", "input": "hi"},
        {"id": "later", "input": "hi", "skip": True}]))
    sweep(tmp_path, "--runs", "2", "-o", "r.html")
    page = open_html(chromium, tmp_path / "r.html")
    runs = page.locator(".card", has=page.locator(".card-label", has_text="Runs"))
    expect(runs.locator(".card-value")).to_have_text("4")  # the skipped case made no run
    expect(runs.locator(".card-caption")).to_have_text("2 timeouts")
    expect(page.locator("#rows tr.case-row", has_text="slow")).to_contain_text("2 timeouts")
    expect(page.locator(".card", has=page.locator(".card-label", has_text="Cost"))).to_have_count(0)
    tops = page.locator(".cards .card").evaluate_all("cs => cs.map(c => c.getBoundingClientRect().top)")
    rows = {top: tops.count(top) for top in tops}
    assert min(rows.values()) > 1 or len(rows) == 1, rows  # no card alone on a row
    th = page.locator('th[data-key="consistency"]')
    assert "last turn" in (th.get_attribute("title") or "")
    expect(page.locator("section[aria-label='Skipped cases'] .hint")).to_contain_text("1 case ·")
    page.context.close()


def test_the_readme_examples_reports_are_ignored_by_git() -> None:
    """The README's first example writes ``-o flaky.html -o junit.xml`` at the repository root."""
    readme = (ROOT / "README.md").read_text()
    assert "-o flaky.html -o junit.xml" in readme
    done = subprocess.run(["git", "check-ignore", "flaky.html", "junit.xml"], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0 and done.stdout.split() == ["flaky.html", "junit.xml"], done


def test_the_progress_bar_and_the_stream_count_no_run_for_a_skipped_case(tmp_path: Path) -> None:
    """On a terminal (a pty here) the bar counts runs made: 3 cases x 2 runs, one skipped, is 4 runs."""
    import pty
    import select

    project(tmp_path, [{"id": "a", "input": "hello"}, {"id": "b", "input": "hi"},
                       {"id": "later", "input": "x", "skip": True}])
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FARM_") and k != "COLUMNS"}
    env.update({"PYTHONPATH": str(ROOT), "FARM_DATA_DIR": str(tmp_path / ".farm-data"), "COLUMNS": "150",
                "TERM": "xterm"})
    process = subprocess.Popen([sys.executable, "-m", "farm", "test", "-i", "suite.jsonl", "-n", "py:agent.py:respond",
                                "--runs", "2", "--no-history", "-o", "r.jsonl"], cwd=tmp_path, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 300)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the pty closed: farm exited
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert process.wait(timeout=300) == 0
    text = seen.decode(errors="replace")
    assert "4/4" in text and "/5" not in text, text[-2000:]
    start = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert start["type"] == "start" and start["total_runs"] == 4


def _point(sweep: str, rate: float, label: str) -> Any:
    from farm.history.trends import CasePoint

    return CasePoint(sweep_id=sweep, pass_rate=rate, ci_low=max(0.0, rate - 15), ci_high=min(100.0, rate + 15),
                     label=label, runs=50, passed=int(rate / 2), skipped=0)


@pytest.mark.browser
def test_the_trend_page_mentions_big_drops_and_has_axes(chromium: Any, tmp_path: Path) -> None:
    import datetime as dt

    from farm.history.sweep_info import SweepInfo
    from farm.history.trends import trend_document
    from farm.reports.history_html import render_trend_html

    window = [SweepInfo(pk=i, sweep_id=f"s{i}", started_at=dt.datetime(2026, 11, i, tzinfo=dt.UTC), finished_at=None,
                        status="complete", stopped=None, agent="a", connector=None, git_commit=None, git_branch=None,
                        total_cases=2, total_runs=100, passed_cases=1, failed_cases=1, flaky_cases=1, broken_cases=0,
                        overall_pass_rate=70.0, duration_ms=1.0) for i in (1, 2)]
    trends = {"falls": [_point("s1", 80, "flaky"), _point("s2", 42, "flaky")],
              "steady": [_point("s1", 100, "stable"), _point("s2", 100, "stable")]}
    path = tmp_path / "trends.html"
    path.write_text(render_trend_html(trend_document(window, trends)))
    page = open_html(chromium, path)
    expect(page.locator("h1 .pill")).to_have_text("1 case newly flaky, broken or fallen")
    falls = page.locator('li.trend[data-case="falls"]')
    expect(falls.locator(".flag")).to_have_text("fell 80% → 42%")
    expect(falls.locator(".changes")).to_have_text("no label change")
    assert falls.locator("line.axis").count() == 2
    assert falls.locator("text.tick").all_text_contents() == ["100%", "50%", "0%", "oldest", "newest sweep"]
    expect(page.locator('#chips [data-filter="changed"]')).to_contain_text("Changed label")
    page.context.close()


@pytest.mark.browser
def test_needs_a_look_leaves_out_inconclusive_cases_that_barely_moved(chromium: Any, tmp_path: Path) -> None:
    from farm.reports.history_html import render_comparison_html
    from farm.stats.compare import CaseSnapshot, SweepSnapshot, compare

    def side(sweep: str, **passed: int) -> SweepSnapshot:
        return SweepSnapshot(sweep_id=sweep, cases=[CaseSnapshot(id=k, runs=10, passed=v) for k, v in passed.items()])

    comparison = compare(side("b", wobbles=9, sinks=10), side("h", wobbles=10, sinks=7))
    verdicts = {c.id: c.verdict for c in comparison.cases}
    assert verdicts["wobbles"] == verdicts["sinks"] == "inconclusive"
    path = tmp_path / "cmp.html"
    path.write_text(render_comparison_html(comparison))
    page = open_html(chromium, path)
    rows = page.locator("#rows tr")
    expect(rows).to_have_count(1)  # "sinks" fell 30 points; "wobbles" rose 10 in ten runs: nothing to look at
    expect(rows.first.locator(".case-id")).to_have_text("sinks")
    page.context.close()
