"""Failures you can debug from the terminal (SPEC 10): exception types and bounded tracebacks in
every report, ``-v`` printing each distinct failure once, the terminal table and summary line.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from farm.cli import main
from farm.models import (
    MAX_TRACEBACK_CHARS,
    MAX_TRACEBACK_FRAMES,
    RunResult,
    RunStatus,
    StopReason,
    SweepOutcome,
    SweepStart,
)
from farm.reports.html import render_html
from farm.sweep.observers import ProgressBar
from tests.reports.test_reports_html import browser, open_report  # noqa: F401  (fixtures: Chromium and a report page)
from tests.support.browser_fixtures import case_stats, run, sweep_report
from tests.support.servers import ROOT

AGENTS = ROOT / "tests" / "agents" / "basic.py"


def farm(*args: str):
    return CliRunner().invoke(main, ["test", "--no-progress", *args], catch_exceptions=False)


def write_suite(path: Path, *cases: dict) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


def test_an_agents_exception_type_and_traceback_reach_every_report(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "boom", "input": "x"})
    outs = {ext: tmp_path / f"r.{ext}" for ext in ("json", "jsonl", "html", "md", "xml")}
    result = farm("-i", str(suite), "-n", f"py:{AGENTS}:crash", "--runs", "3",
                  *(a for o in outs.values() for a in ("-o", str(o))))
    assert result.exit_code == 1
    details = json.loads(outs["json"].read_text())["results"][0]["run_details"]
    assert {d["error_type"] for d in details} == {"RuntimeError"}
    first = details[0]["traceback"]
    assert 'raise RuntimeError("agent exploded")' in first and "tests/agents/basic.py" in first
    assert [d["traceback"] for d in details[1:]] == [None, None]  # the same error's traceback is kept once
    lines = [json.loads(line) for line in outs["jsonl"].read_text().splitlines()]
    runs = [e for e in lines if e["type"] == "result"]
    assert all(e["error_type"] == "RuntimeError" and "agent exploded" in e["traceback"] for e in runs)
    assert runs[0]["error"] == "agent exploded"  # Yao's field keeps the message
    assert "RuntimeError: agent exploded" in outs["md"].read_text()
    assert "RuntimeError: agent exploded" in outs["xml"].read_text()
    assert 'raise RuntimeError(\\"agent exploded\\")' in outs["html"].read_text()  # in the embedded data


def test_a_deep_traceback_is_bounded_to_its_innermost_frames(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "deep", "input": "x"})
    out = tmp_path / "r.jsonl"
    assert farm("-i", str(suite), "-n", f"py:{AGENTS}:deep_crash", "-o", str(out)).exit_code == 1
    event = next(json.loads(line) for line in out.read_text().splitlines() if '"result"' in line)
    trace = event["traceback"]
    assert len(trace) <= MAX_TRACEBACK_CHARS
    assert trace.count('File "') <= MAX_TRACEBACK_FRAMES
    assert trace.rstrip().endswith("ValueError: bottom reached in case deep")  # the innermost end is kept
    assert "in down" in trace


def test_verbose_prints_each_distinct_failure_once_with_its_count(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"}, {"id": "b", "input": "y"})
    result = farm("-i", str(suite), "-n", f"py:{AGENTS}:crash", "--runs", "3", "-v", "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 1
    err = result.stderr
    assert err.count("6 runs failed: error: RuntimeError: agent exploded") == 1
    assert err.count("Traceback (most recent call last)") == 1  # one example, not one per run
    assert "cases: a, b" in err
    flaky = write_suite(tmp_path / "f.jsonl", {"id": "f", "input": "x", "expected": "yes"})
    result = farm("-i", str(flaky), "-n", f"py:{AGENTS}:flaky", "--runs", "4", "-v", "-o", str(tmp_path / "f.json"))
    assert "2 runs failed: equals: expected 'yes'" in result.stderr
    assert re.search(r"e\.g\. f run \d \(failed\): equals: ", result.stderr)


def test_the_table_shows_interval_class_and_top_failure_reason(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "f", "input": "x", "expected": "yes"},
                        {"id": "ok", "input": "x", "expected": "yes"}, {"id": "s", "input": "x", "skip": True})
    agent = tmp_path / "agent.py"
    agent.write_text("def run(messages, context):\n"
                     "    return 'yes' if context.case_id == 'ok' or context.run % 2 else 'no'\n")
    result = farm("-i", str(suite), "-n", f"py:{agent}:run", "--runs", "4", "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 1
    rows = result.stderr.splitlines()
    header = next(line for line in rows if "pass rate" in line and "95% CI" in line)
    assert "class" in header and "most common failure" in header and "failure classes" in header
    failing = next(line for line in rows if line.startswith("FAIL"))
    assert re.fullmatch(r"FAIL\s+f\s+4\s+50\.0%\s+15\.0–85\.0%\s+unstable\s+2× equals: expected 'yes'"
                        r"\s+assertion:equals ×2", failing)
    assert re.fullmatch(r"pass\s+ok\s+4\s+100\.0%\s+51\.0–100\.0%\s+stable", next(r for r in rows if "pass  ok" in r))
    assert "skipped (skip: true): s" in result.stderr
    assert not any(re.match(r"\S+\s+s\s", line) for line in rows)  # no row for the skipped case


def test_the_summary_line_separates_failures_errors_and_timeouts(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("import time\n"
                     "def run(messages, context):\n"
                     "    if context.case_id == 'err':\n        raise KeyError('missing')\n"
                     "    if context.case_id == 'slow':\n        time.sleep(5)\n"
                     "    return 'yes' if context.case_id == 'ok' else 'no'\n")
    suite = write_suite(tmp_path / "s.jsonl", *({"id": c, "input": "x", "expected": "yes"} for c in
                                                ("ok", "bad", "err")),
                        {"id": "slow", "input": "x", "expected": "yes", "timeout": "1s"})
    result = farm("-i", str(suite), "-n", f"py:{agent}:run", "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 1
    assert ("1 passed, 3 failed of 4 cases; 4 runs: 1 passed, 1 failed, 1 error, 1 timeout (25.0% pass rate); "
            "0 flaky, 3 broken;") in result.stderr


def test_the_progress_bar_shows_the_running_pass_rate() -> None:
    out = io.StringIO()
    bar = ProgressBar(Console(file=out, force_terminal=True, width=160))
    bar.on_start(SweepStart(sweep_id="s-1", agent_id="agent", total_cases=1, total_runs=3,
                            timestamp="2026-01-01T00:00:00Z"))
    for n, status in ((1, RunStatus.PASSED), (2, RunStatus.FAILED), (3, RunStatus.PASSED)):
        bar.on_result(RunResult(case_id="c", run=n, status=status))
    bar._progress.refresh()
    text = out.getvalue()
    bar._progress.stop()
    assert "2 passed" in text and "1 failed" in text and "(66.7% pass rate)" in text


@pytest.mark.browser
def test_the_html_report_shows_the_error_type_traceback_and_skipped_cases(open_report: Any) -> None:  # noqa: F811
    from playwright.sync_api import expect

    trace = 'Traceback (most recent call last):\n  File "agent.py", line 3, in run\nKeyError: \'missing\''
    report = sweep_report([
        case_stats("bad", [run(1, "error", output=None, error="'missing'", error_type="KeyError", traceback=trace)]),
    ])
    report.summary.skipped_ids = ["later"]
    report = report.model_copy(update={"outcome": SweepOutcome(stopped=StopReason.INTERRUPTED, not_run=["never"])})
    assert "KeyError" in render_html(report)
    page = open_report(report).page
    expect(page.locator("h1 .pill")).to_have_text("Stopped: interrupted")
    expect(page.locator("section[aria-label='Skipped cases'] li")).to_have_text(["later"])
    expect(page.locator("section[aria-label='Cases not run'] li")).to_have_text(["never"])
    page.locator("#rows tr.case-row").first.click()
    box = page.locator("tr.detail-row .error-box")
    expect(box.locator("b")).to_have_text("KeyError")
    box.locator("details.trace summary").click()
    expect(box.locator("details.trace pre")).to_have_text(trace)
