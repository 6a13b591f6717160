"""Tests of farm.reports: the format registry, extension mapping and the text summary."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from farm.errors import SettingsError
from farm.models import Case, CaseStats, RunResult, RunStatus, SweepReport
from farm.reports import (
    BUILTIN_REPORTERS,
    RENDERERS,
    format_for_path,
    render_json,
    render_jsonl,
    render_report,
)
from farm.reports.junit import render_junit
from farm.reports.markdown import render_markdown
from farm.reports.summary import render_summary
from farm.stats import CaseAccumulator, CasePlan, build_report


def _stats(case_id: str, statuses: list[str], required: int, skip: bool = False) -> CaseStats:
    acc = CaseAccumulator(Case(id=case_id, format="yao", turns=[], skip=skip),
                          CasePlan(runs=len(statuses), required=required))
    for n, status in enumerate(statuses, 1):
        acc.add(RunResult(case_id=case_id, run=n, status=RunStatus(status), duration_ms=40.0, output="x"))
    return acc.stats()


def sample_report() -> SweepReport:
    cases = [_stats("good", ["passed"] * 4, 4), _stats("flaky-1", ["passed", "failed", "passed", "passed"], 4),
             _stats("dead\x1b[31m", ["failed"] * 4, 1), _stats("off", ["skipped"], 0, skip=True),
             _stats("ok-ish", ["passed", "failed", "failed", "failed"], 1)]
    return build_report(cases, duration_ms=65_432, runs_per_case=4, environment={},
                        metadata={"agent_id": "keyword"})


def test_summary_is_a_few_plain_lines() -> None:
    assert render_summary(sample_report()).splitlines() == [
        "keyword: 2/4 cases passed (2 failed, 1 skipped)",
        "runs: 16 (4 per case), pass rate 50.0%, duration 65.4s",  # the skipped case made no run
        "failed: flaky-1, dead[31m",
        "flaky: flaky-1, ok-ish",
        "broken: dead[31m",
        "failures by class:",
        "      8  assertion:unknown  e.g. flaky-1 run 2, turn 1",
        "cost unknown",
    ]


def test_summary_of_an_all_green_sweep_names_no_case() -> None:
    report = build_report([_stats("a", ["passed"], 1)], duration_ms=12, runs_per_case=1, environment={},
                          metadata={})
    assert render_summary(report) == "agent: 1/1 cases passed (0 failed, 0 skipped)\n" \
                                     "runs: 1 (1 per case), pass rate 100.0%, duration 12ms\n" \
                                     "cost unknown\n"


@pytest.mark.parametrize(("fmt", "renderer"), [
    ("json", render_json), ("jsonl", render_jsonl), ("markdown", render_markdown), ("junit", render_junit),
    ("summary", render_summary),
])
def test_render_report_dispatches_by_format(fmt: str, renderer: object) -> None:
    report = sample_report()
    assert render_report(report, fmt) == renderer(report)  # type: ignore[operator]


@pytest.mark.skipif(importlib.util.find_spec("farm.reports.html") is None, reason="HTML renderer not present")
def test_html_is_loaded_on_demand() -> None:
    from farm.reports.html import render_html

    report = sample_report()
    assert render_report(report, "html") == render_html(report)


def test_unknown_format_is_a_settings_error_listing_the_known_ones() -> None:
    with pytest.raises(SettingsError, match=r"unknown report format 'pdf' \(expected one of: html, json, "):
        render_report(sample_report(), "pdf")


@pytest.mark.parametrize(("name", "fmt"), [
    ("out.jsonl", "jsonl"), ("r.json", "json"), ("r.md", "markdown"), ("r.markdown", "markdown"),
    ("r.html", "html"), ("R.HTM", "html"), ("junit.xml", "junit"), ("dir.v2/report.JSON", "json"),
])
def test_format_follows_the_extension(name: str, fmt: str) -> None:
    assert format_for_path(Path(name)) == fmt


@pytest.mark.parametrize(("name", "shown"), [("report.txt", "'.txt'"), ("report", "no extension")])
def test_unknown_extension_is_a_settings_error_naming_it(name: str, shown: str) -> None:
    with pytest.raises(SettingsError) as info:
        format_for_path(name)
    message = str(info.value)
    assert message.startswith(f"{name}: cannot tell the output format from ")
    assert shown in message and ".jsonl, .json, .md, .markdown, .html, .htm, .xml" in message


def test_builtin_reporters_name_known_formats() -> None:
    assert BUILTIN_REPORTERS == {"report.json": "json", "report.markdown": "markdown", "report.html": "html",
                                 "report.summary": "summary"}
    assert set(BUILTIN_REPORTERS.values()) <= set(RENDERERS)
