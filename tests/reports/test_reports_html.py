"""The HTML report: escaping and structure in Python, behaviour in real headless Chromium.

Hostile agent output must stay text, nothing may be fetched, the table filters, sorts, pages
and expands, and the data exports. A screenshot lands in ``artifacts/report-screenshot.png``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from farm.models import CheckOutcome, SweepReport
from farm.reports.html import render_html
from farm.reports.html_kit import script_safe_json
from tests.support.browser_fixtures import Opened, case_stats, headless_chromium, run, sweep_report, synthetic_report

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - playwright is a dev dependency
    expect = None

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "</script><script>window.__pwned=1</script>"
IMG = '"><img src=x onerror="window.__pwned=1">'
JS_URL = "javascript:window.__pwned=1"
TEMPLATE = "{{7*7}}"
SEPARATORS = "line\u2028separator\u2029paragraph"


def hostile_report() -> SweepReport:
    """A sweep whose ids, outputs, errors and metadata are injection payloads."""
    check = CheckOutcome(name="contains", passed=False, message=IMG, actual=SCRIPT, expected=TEMPLATE)
    cases = [
        case_stats(SCRIPT, [run(1, "passed", 120, IMG), run(2, "failed", 340, JS_URL, failed_checks=[check]),
                            run(3, "error", 90, None, error=SCRIPT)],
                   suite=IMG, input=JS_URL, expected=TEMPLATE),
        case_stats(IMG, [run(n, "passed", 200 + n, {"html": IMG, "sep": SEPARATORS}) for n in (1, 2, 3)],
                   suite="payloads", input=[{"role": "user", "content": SCRIPT}]),
        case_stats(TEMPLATE, [run(n, "failed", 50, TEMPLATE) for n in (1, 2, 3)], suite="payloads"),
        case_stats("alpha-1", [run(n, "passed", 1000 * n, "needle-output") for n in (1, 2, 3)], suite="alpha"),
        case_stats("alpha-2", [run(1, "passed", 400), run(2, "timeout", 900, None, error="timed out after 0.9s"),
                               run(3, "passed", 410)], suite="alpha"),
        case_stats("beta-1", [run(n, "passed", 10) for n in (1, 2, 3)], suite="beta"),
    ]
    report = sweep_report(cases, agent_id=IMG, sweep_id=SCRIPT, connector=JS_URL, comparison="neuro-san-compat")
    report.environment[IMG] = SCRIPT
    return report


# ------------------------------------------------------------------------ pure rendering


class _Elements(HTMLParser):
    """Every start tag with its attributes, and the text of each script element."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def parse(html: str) -> _Elements:
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return parser


def test_script_safe_json_keeps_the_value_and_drops_breakout_characters() -> None:
    value = {"a": SCRIPT, "b": IMG + "&amp;", "c": SEPARATORS, "<key>": ["&", 1.5, None]}
    text = script_safe_json(json.dumps(value, ensure_ascii=False))
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
    assert "\\u003c/script\\u003e" in text
    assert json.loads(text) == value


def test_payloads_create_no_elements_or_handlers() -> None:
    elements = parse(render_html(hostile_report()))
    tags = {tag for tag, _ in elements.tags}
    assert "img" not in tags
    assert [a.get("type") for t, a in elements.tags if t == "script"] == ["application/json", None]
    handlers = [(t, k) for t, attrs in elements.tags for k in attrs if k.startswith("on")]
    assert handlers == []
    assert len(elements.scripts) == 2


def test_embedded_data_is_exactly_the_report() -> None:
    report = hostile_report()
    data = parse(render_html(report)).scripts[0]
    assert json.loads(data) == json.loads(report.model_dump_json())
    assert SEPARATORS in json.loads(data)["results"][1]["run_details"][0]["output"]["sep"]


def test_server_rendered_text_is_escaped() -> None:
    html = render_html(hostile_report())
    markup = html.split('<script type="application/json"')[0]
    assert "&lt;/script&gt;&lt;script&gt;window.__pwned=1&lt;/script&gt;" in markup  # chart label, sweep id
    assert "&#34;&gt;&lt;img src=x onerror=&#34;window.__pwned=1&#34;&gt;" in markup  # agent name
    assert TEMPLATE in markup  # shown literally, never evaluated
    assert "neuro-san-compat (less: actual &gt; given)" in markup


def test_page_loads_nothing_from_outside() -> None:
    html = render_html(synthetic_report(20, 3))
    elements = parse(html)
    head = [t for t, _ in elements.tags][:3]
    assert head == ["html", "head", "meta"]
    csp = elements.tags[3][1]
    assert csp["http-equiv"] == "Content-Security-Policy"
    assert "default-src 'none'" in (csp["content"] or "")
    urls = [v for _, attrs in elements.tags for k, v in attrs.items() if k in ("src", "href", "action")]
    assert all((v or "").startswith("data:") for v in urls), urls
    for marker in ("http://", "https://", "@import", "url(", "fetch(", "XMLHttpRequest", "innerHTML"):
        assert marker not in html


def test_render_is_pure() -> None:
    report = synthetic_report(30, 4, seed=3)
    before = report.model_dump_json()
    assert render_html(report) == render_html(report)
    assert report.model_dump_json() == before


def test_charts_only_when_cases_ran_several_times() -> None:
    single = render_html(sweep_report([case_stats("a", [run(1)]), case_stats("b", [run(1, "failed")])]))
    assert 'id="stability-charts"' not in single
    html = render_html(hostile_report())
    assert 'id="chart-pass-rate"' in html and 'id="chart-duration"' in html
    bars = {a["data-bucket"]: a["data-count"] for t, a in parse(html).tags if "data-bucket" in a}
    assert bars == {"0%": "1", "<20%": "0", "20–39%": "1", "40–59%": "0", "60–79%": "1",
                    "80–99%": "0", "100%": "3"}
    spread = [a["data-case"] for t, a in parse(html).tags if "data-case" in a]
    assert spread[:2] == ["alpha-1", "alpha-2"]  # slowest first
    assert len(spread) == 6


def test_spread_chart_keeps_the_slowest_twenty() -> None:
    cases = [case_stats(f"c{i:02d}", [run(1, ms=i), run(2, ms=i * 2)]) for i in range(1, 31)]
    spread = [a["data-case"] for t, a in parse(render_html(sweep_report(cases))).tags if "data-case" in a]
    assert spread == [f"c{i:02d}" for i in range(30, 10, -1)]


def test_empty_sweep_renders() -> None:
    html = render_html(sweep_report([]))
    assert "No cases" in html
    assert json.loads(parse(html).scripts[0])["results"] == []


# ------------------------------------------------------------------------ in Chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as chromium:
        yield chromium


@pytest.fixture
def open_report(browser: Any, tmp_path: Path) -> Iterator[Any]:
    opened: list[Opened] = []

    def open_(report: SweepReport) -> Opened:
        path = tmp_path / f"report-{len(opened)}.html"
        path.write_text(render_html(report), encoding="utf-8")
        opened.append(Opened(browser, path))
        return opened[-1]

    yield open_
    for o in opened:
        o.context.close()


@pytest.mark.browser
def test_payloads_stay_text_and_nothing_is_fetched(open_report: Any) -> None:
    r = open_report(hostile_report())
    page = r.page
    row = page.locator("#rows tr.case-row").first
    row.click()
    expect(page.locator("tr.detail-row .error-box")).to_contain_text(SCRIPT)
    for text in (SCRIPT, IMG, TEMPLATE, JS_URL):
        expect(page.get_by_text(text, exact=True).first).to_be_visible()
    expect(page.locator("h1 .agent")).to_have_text(IMG)
    expect(page.locator("tr.detail-row .check-msg")).to_have_text(IMG)
    page.locator("#rows tr.case-row").nth(1).click()
    assert page.locator("tr.detail-row pre", has_text="separator").count() >= 1
    assert SEPARATORS in page.locator("tr.detail-row pre", has_text="separator").first.text_content()
    assert page.locator("img").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert r.dialogs == [] and r.problems == []
    assert r.requests == [r.url] and r.blocked == []


@pytest.mark.browser
def test_filter_box_and_status_buttons_narrow_the_table(open_report: Any) -> None:
    r = open_report(hostile_report())
    page, count = r.page, r.page.locator("#row-count")
    expect(count).to_have_attribute("data-matching", "6")
    page.fill("#filter", "ALPHA")
    expect(count).to_have_attribute("data-matching", "2")
    assert page.locator("#rows tr.case-row").count() == 2
    page.fill("#filter", "needle-output")  # only in a run's output
    expect(count).to_have_attribute("data-matching", "1")
    expect(page.locator("#rows .case-id")).to_have_text(["alpha-1"])
    page.fill("#filter", "")
    expect(count).to_have_attribute("data-matching", "6")
    page.click("#chips button[data-filter=broken]")
    expect(count).to_have_attribute("data-matching", "1")
    expect(page.locator("#rows .case-id")).to_have_text([TEMPLATE])
    expect(count).to_contain_text("1 matching (6 total)")


@pytest.mark.browser
def test_clicking_a_header_sorts_both_ways(open_report: Any) -> None:
    report = hostile_report()
    r = open_report(report)
    page = r.page
    rates = [c.pass_rate for c in report.results]
    page.click("#results th[data-key=pass_rate]")
    expect(page.locator("#results th[data-key=pass_rate]")).to_have_attribute("aria-sort", "ascending")
    assert [rates[i] for i in r.indices()] == sorted(rates)
    page.click("#results th[data-key=pass_rate]")
    expect(page.locator("#results th[data-key=pass_rate]")).to_have_attribute("aria-sort", "descending")
    assert [rates[i] for i in r.indices()] == sorted(rates, reverse=True)
    page.click("#results th[data-key=avg_duration_ms]")
    durations = [report.results[i].avg_duration_ms for i in r.indices()]
    assert durations == sorted(durations) and durations[-1] == 2000


@pytest.mark.browser
def test_a_row_expands_to_its_runs_and_collapses(open_report: Any) -> None:
    report = hostile_report()
    r = open_report(report)
    page = r.page
    assert page.locator(".run-row").count() == 0  # run details are built on demand
    row = page.locator("#rows tr.case-row").first
    row.click()
    expect(row).to_have_attribute("aria-expanded", "true")
    runs = page.locator("tr.detail-row .run-row")
    expect(runs).to_have_count(len(report.results[0].run_details))
    expect(runs.nth(1)).to_contain_text("failed")
    check = page.locator("tr.detail-row .check")
    expect(check.locator("pre")).to_have_text([TEMPLATE, SCRIPT])  # expected, then actual
    colour = page.eval_on_selector("tr.detail-row .error-box", "e => getComputedStyle(e).color")
    red, green, blue = (int(v) for v in colour[colour.index("(") + 1:-1].split(",")[:3])
    assert red > 150 and green < 100 and blue < 100
    row.click()
    expect(page.locator("tr.detail-row")).to_have_count(0)


@pytest.mark.browser
def test_export_downloads_the_embedded_report(open_report: Any) -> None:
    report = hostile_report()
    r = open_report(report)
    with r.page.expect_download() as info:
        r.page.click("#export")
    download = info.value
    data = json.loads(Path(download.path()).read_text(encoding="utf-8"))
    assert [c["id"] for c in data["results"]] == [c.id for c in report.results]
    assert data == json.loads(report.model_dump_json())
    assert download.suggested_filename.startswith("farm-report-") and "<" not in download.suggested_filename
    assert all(u == r.url or u.startswith("blob:") for u in r.requests) and r.blocked == []


@pytest.mark.browser
def test_large_sweep_renders_one_page_and_no_runs(open_report: Any) -> None:
    r = open_report(synthetic_report(300, 20, seed=1))
    page = r.page
    expect(page.locator("#row-count")).to_have_attribute("data-matching", "300")
    assert page.locator("#rows tr.case-row").count() == 100
    assert page.locator(".run-row").count() == 0
    page.click("#next")
    assert r.indices()[0] == 100
    page.select_option("#page-size", "250")
    assert page.locator("#rows tr.case-row").count() == 250
    assert r.problems == []


@pytest.mark.browser
def test_screenshot_for_people(open_report: Any) -> None:
    """Leaves artifacts/report-screenshot.png: a realistic sweep with a flaky case opened."""
    report = synthetic_report(40, 10, seed=7)
    r = open_report(report)
    flaky = next(i for i, c in enumerate(report.results) if c.label == "flaky" and c.errors)
    r.page.locator(f"#rows tr.case-row[data-index='{flaky}']").click()
    expect(r.page.locator("tr.detail-row .run-row")).to_have_count(10)
    out = ROOT / "artifacts" / "report-screenshot.png"
    out.parent.mkdir(exist_ok=True)
    r.page.screenshot(path=str(out), full_page=True)
    assert out.stat().st_size > 10_000


AGENT = """
PAYLOADS = {payloads!r}

def respond(messages, context):
    text = messages[-1]["content"]
    if text == "boom":
        raise RuntimeError(PAYLOADS[1])
    if text == "flaky" and context.run % 2 == 0:
        return {{"answer": "wrong", "payload": PAYLOADS[0]}}
    return {{"answer": "right", "payload": PAYLOADS[len(text) % len(PAYLOADS)]}}
"""


@pytest.mark.browser
def test_report_of_a_real_sweep(browser: Any, tmp_path: Path) -> None:
    """The CLI's own ``-o report.html`` from a sweep whose agent answers with payloads."""
    payloads = [SCRIPT, IMG, JS_URL, TEMPLATE, SEPARATORS]
    (tmp_path / "agent.py").write_text(AGENT.format(payloads=payloads))
    cases = [{"id": f"case-{i} {p}", "input": "x" * i, "assert": {"type": "json_path", "path": "$.answer",
                                                                  "value": "right", "message": p}}
             for i, p in enumerate(payloads)]
    cases += [{"id": "flaky-case", "input": "flaky", "assert": {"type": "json_path", "path": "answer",
                                                                "value": "right"}},
              {"id": "error-case", "input": "boom"}]
    suite = tmp_path / "suite.jsonl"
    suite.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    out = tmp_path / "report.html"
    # A subprocess: Playwright's sync API holds this thread's event loop, the CLI needs its own.
    result = subprocess.run([sys.executable, "-m", "farm", "test", "--no-progress", "-i", str(suite), "-n",
                             f"py:{tmp_path}/agent.py:respond", "--runs", "4", "-o", str(out)],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 1, result.stderr  # flaky-case and error-case fail
    r = Opened(browser, out)
    try:
        page = r.page
        expect(page.locator("#rows tr.case-row")).to_have_count(len(cases))
        assert page.locator("#stability-charts svg").count() == 2
        page.locator("#rows tr.case-row", has_text="error-case").click()
        expect(page.locator("tr.detail-row .error-box")).to_have_count(4)  # every run errored
        expect(page.locator("tr.detail-row .error-box").first).to_contain_text(IMG)
        page.locator("#rows tr.case-row", has_text="flaky-case").click()
        expect(page.locator("tr.detail-row .check")).to_have_count(2)  # runs 2 and 4 failed
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert r.dialogs == [] and r.problems == []
        assert r.requests == [r.url] and r.blocked == []
    finally:
        r.context.close()
