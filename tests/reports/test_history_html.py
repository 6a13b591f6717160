"""The comparison page, the trend page and the report's "compared with" section, in headless Chromium.

Hostile case ids, tags and agent names must stay text; nothing may be fetched; the filters work;
the trend page draws one line (with its interval band) per run of consecutive sweeps.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from farm.reports.history_html import render_comparison_html, render_trend_html
from farm.reports.html import render_html
from farm.stats.compare import CaseSnapshot, Comparison, SweepSnapshot, compare
from tests.support.browser_fixtures import case_stats, headless_chromium, run, sweep_report

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - playwright is a dev dependency
    expect = None

SCRIPT = "</script><script>window.__pwned=1</script>"
IMG = '"><img src=x onerror="window.__pwned=1">'


def hostile_comparison() -> Comparison:
    base = SweepSnapshot(sweep_id="base-1", started_at="2026-11-01T02:00:00Z", tags={"branch": IMG}, cases=[
        CaseSnapshot(id=SCRIPT, runs=30, passed=30, label="stable"),
        CaseSnapshot(id="steady", runs=200, passed=200, label="stable"),
        CaseSnapshot(id="gone", runs=5, passed=5, label="stable"),
    ])
    head = SweepSnapshot(sweep_id=IMG, started_at="2026-11-02T02:00:00Z", cases=[
        CaseSnapshot(id=SCRIPT, runs=30, passed=5, label="flaky", failure_reasons=[IMG]),
        CaseSnapshot(id="steady", runs=200, passed=200, label="stable"),
        CaseSnapshot(id="fresh", runs=5, passed=5, label="stable"),
    ])
    return compare(base, head)


def point(sweep_id: str, rate: float, label: str) -> dict[str, Any]:
    return {"sweep_id": sweep_id, "pass_rate": rate, "ci_low": max(0.0, rate - 10), "ci_high": min(100.0, rate + 10),
            "label": label, "runs": 10, "passed": int(rate / 10), "skipped": 0}


def trend_doc() -> dict[str, Any]:
    sweeps = [{"sweep_id": f"s{i}", "started_at": f"2026-11-0{i}T02:00:00Z", "finished_at": None,
               "status": "complete", "stopped": None, "agent": IMG, "connector": None, "git_commit": "abc1234def",
               "git_branch": "main", "total_cases": 3, "total_runs": 30, "passed_cases": 2, "failed_cases": 1,
               "flaky_cases": 0, "broken_cases": 1, "overall_pass_rate": 70.0, "duration_ms": 10.0,
               "tags": {"note": SCRIPT}} for i in (1, 2, 3)]
    cases = [
        {"id": "breaks", "points": [point("s1", 100, "stable"), point("s2", 60, "flaky"), point("s3", 0, "broken")],
         "changes": [{"sweep_id": "s2", "from": "stable", "to": "flaky"},
                     {"sweep_id": "s3", "from": "flaky", "to": "broken"}], "flag": "became broken"},
        {"id": "gappy", "points": [point("s1", 100, "stable"), None, point("s3", 100, "stable")], "changes": [],
         "flag": None},
        {"id": SCRIPT, "points": [point("s1", 100, "stable")] * 3, "changes": [], "flag": None},
    ]
    judged = {"case": "breaks", "criterion_id": "1.1", "turn": 1, "check": "agent", "criterion": SCRIPT,
              "points": [{"checked_at": f"2026-11-0{i}T03:00:00Z", "sweep_id": f"s{i}", "judge": "j", "repeats": 5,
                          "outputs": 40, "flipped": flipped, "judge_flip_rate": flipped / 40,
                          "judge_flip_rate_ci": [0.0, 1.0], "judge_noisy": flipped > 10}
                         for i, flipped in ((1, 0), (3, 16))]}
    return {"sweeps": sweeps, "cases": cases, "judge_checks": [judged]}


# ------------------------------------------------------------------------------------ pure


def test_pages_are_self_contained_and_embed_their_data_safely() -> None:
    for html, data in ((render_comparison_html(hostile_comparison()), hostile_comparison().model_dump(mode="json")),
                       (render_trend_html(trend_doc()), trend_doc())):
        assert "Content-Security-Policy" in html and "default-src 'none'" in html
        assert SCRIPT not in html and "<img" not in html
        start = html.index('id="farm-data">') + len('id="farm-data">')
        embedded = html[start:html.index("</script>", start)]
        assert json.loads(embedded) == json.loads(json.dumps(data))
        assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")


def test_the_report_shows_a_comparison_only_when_one_is_attached() -> None:
    report = sweep_report([case_stats("a", [run(1)])])
    assert 'id="compared-with"' not in render_html(report)
    report = report.model_copy(update={"envelope": report.envelope.updated(
        compared_with=hostile_comparison().model_dump(mode="json"))})
    html = render_html(report)
    assert 'id="compared-with"' in html and "1 regressed" in html and SCRIPT not in html
    assert "compared_with" not in html.split('id="farm-data"')[0]  # not dumped into the metadata table


# ------------------------------------------------------------------------------------ Chromium


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with headless_chromium() as browser:
        yield browser


@pytest.fixture
def open_page(chromium: Any, tmp_path: Path) -> Iterator[Any]:
    """Open an HTML text in a fresh context that refuses every non-file request; yields (page, log)."""
    contexts: list[Any] = []

    def open_(html: str) -> tuple[Any, dict[str, list[str]]]:
        path = tmp_path / f"page-{len(contexts)}.html"
        path.write_text(html, encoding="utf-8")
        log: dict[str, list[str]] = {"requests": [], "blocked": [], "problems": []}
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        contexts.append(context)
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                      else (log["blocked"].append(route.request.url), route.abort()))
        page = context.new_page()
        page.on("request", lambda r: log["requests"].append(r.url))
        page.on("pageerror", lambda e: log["problems"].append(str(e)))
        page.goto(path.as_uri())
        page.wait_for_selector("html[data-ready]")
        log["url"] = [path.as_uri()]
        return page, log

    yield open_
    for context in contexts:
        context.close()


def _inert(page: Any, log: dict[str, list[str]]) -> None:
    assert page.locator("img").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert log["problems"] == [] and log["blocked"] == [] and log["requests"] == log["url"]


@pytest.mark.browser
def test_comparison_page_filters_and_keeps_payloads_as_text(open_page: Any) -> None:
    page, log = open_page(render_comparison_html(hostile_comparison()))
    rows = page.locator("#rows tr")
    expect(rows).to_have_count(3)  # "needs a look": regressed, new, removed; not the unchanged case
    expect(rows.first.locator(".badge")).to_have_text("regressed")
    expect(rows.first.locator(".case-id")).to_have_text(SCRIPT)
    expect(rows.first.locator(".notes")).to_contain_text("new failure: " + IMG)
    expect(page.locator("#verdict")).to_have_text("1 regressed")
    page.locator('#chips [data-filter="all"]').click()
    expect(rows).to_have_count(4)
    page.locator("#filter").fill("stead")
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".badge")).to_have_text("unchanged")
    page.locator("#filter").fill("")
    page.locator('#chips [data-filter="new"]').click()
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".case-id")).to_have_text("fresh")
    _inert(page, log)


@pytest.mark.browser
def test_trend_page_draws_lines_with_bands_and_filters(open_page: Any) -> None:
    page, log = open_page(render_trend_html(trend_doc()))
    items = page.locator("#cases li.trend")
    expect(items).to_have_count(3)
    breaks = page.locator('li.trend[data-case="breaks"]')
    assert breaks.locator("polyline.line").count() == 1 and breaks.locator("polygon.band").count() == 1
    assert breaks.locator("circle.dot.broken").count() == 1
    expect(breaks.locator(".flag")).to_have_text("became broken")
    expect(breaks.locator(".change")).to_have_text(["stable → flaky at s2", "flaky → broken at s3", f"agent {SCRIPT}: "
                                                    "judge flip rate 0% → 40% NOISY (2 checks, newest 5 verdicts × 40 "
                                                    "outputs)"])
    gappy = page.locator('li.trend[data-case="gappy"]')
    assert gappy.locator("polyline.line").count() == 2  # the sweep it missed breaks the line
    heights = breaks.locator("circle.dot").evaluate_all("ds => ds.map(d => Number(d.getAttribute('cy')))")
    assert heights == sorted(heights)  # 100 % at the top, 0 % at the bottom
    page.locator('#chips [data-filter="flagged"]').click()
    expect(items).to_have_count(1)
    page.locator('#chips [data-filter="all"]').click()
    page.locator("#filter").fill("script")
    expect(items).to_have_count(1)
    expect(items.first.locator(".case-id")).to_have_text(SCRIPT)
    sweep_rows = page.locator("#sweep-rows tr")
    expect(sweep_rows).to_have_count(3)
    expect(sweep_rows.first.locator("td").nth(1)).to_have_text("s3")  # newest first
    expect(sweep_rows.first).to_contain_text("note=" + SCRIPT)
    _inert(page, log)


@pytest.mark.browser
def test_the_reports_compared_with_section_in_the_browser(open_page: Any) -> None:
    report = sweep_report([case_stats(SCRIPT, [run(1), run(2, "failed")])])
    report = report.model_copy(update={"envelope": report.envelope.updated(
        compared_with=hostile_comparison().model_dump(mode="json"))})
    page, log = open_page(render_html(report))
    section = page.locator("#compared-with")
    expect(section).to_be_visible()
    expect(section.locator("h2")).to_contain_text("Compared with base-1")
    expect(section.locator("tbody tr").first.locator("td").nth(1)).to_have_text(SCRIPT)
    _inert(page, log)
