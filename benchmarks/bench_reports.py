"""Render time and size of the JSON and HTML reports for 1,000 cases × 20 runs, and the HTML
page's load time in headless Chromium.

    python benchmarks/bench_reports.py [--cases 1000] [--runs 20] [--repeat 3] [--json]

The report is synthetic but realistic (tests/browser_fixtures.synthetic_report): mostly stable
cases, some flaky and broken ones, errors, structured outputs. Medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from farm.reports import render_report
from tests.support.browser_fixtures import chromium_path, launch_chromium, synthetic_report


def _timed(fn, repeat: int) -> tuple[float, object]:
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def _page_load(html_path: Path, cases: int, repeat: int) -> dict[str, float] | None:
    """Median wall times of loading, filtering, sorting and expanding, and in-page figures."""
    if chromium_path() is None:
        return None
    from playwright.sync_api import sync_playwright

    samples: dict[str, list[float]] = {}
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            for _ in range(repeat):
                page = browser.new_page()
                for key, value in _page_figures(page, html_path, cases).items():
                    samples.setdefault(key, []).append(value)
                page.close()
        finally:
            browser.close()
    return {key: statistics.median(values) for key, values in samples.items()}


def _page_figures(page: Any, html_path: Path, cases: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    start = time.perf_counter()
    page.goto(html_path.as_uri())
    page.wait_for_selector("html[data-ready]")
    figures["load_s"] = time.perf_counter() - start
    figures["ready_ms_in_page"] = page.evaluate("performance.getEntriesByName('farm-ready')[0].startTime")
    figures["js_heap_mb"] = page.evaluate("performance.memory ? performance.memory.usedJSHeapSize / 1e6 : -1")
    start = time.perf_counter()
    page.fill("#filter", "case-0999")
    page.locator("tr.case-row", has_text="case-0999").first.wait_for()
    figures["filter_s"] = time.perf_counter() - start  # includes the filter box's 120 ms debounce
    page.fill("#filter", "")
    page.locator(f"#row-count[data-matching='{cases}']").wait_for()
    start = time.perf_counter()
    page.click("#results th[data-key='avg_duration_ms']")
    page.locator("#results th[aria-sort='ascending']").wait_for()
    figures["sort_s"] = time.perf_counter() - start
    start = time.perf_counter()
    page.locator("tr.case-row").first.click()
    page.locator("tr.detail-row .run-row").first.wait_for()
    figures["expand_s"] = time.perf_counter() - start
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    report = synthetic_report(args.cases, args.runs)
    figures: dict[str, object] = {"cases": args.cases, "runs_per_case": args.runs}
    for fmt in ("json", "html"):
        seconds, text = _timed(lambda fmt=fmt: render_report(report, fmt), args.repeat)
        figures[f"{fmt}_render_s"] = round(seconds, 3)
        figures[f"{fmt}_size_mb"] = round(len(str(text).encode()) / 1e6, 2)
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "report.html"
        html.write_text(render_report(report, "html"), encoding="utf-8")
        page = _page_load(html, args.cases, args.repeat)
    if page:
        figures.update({k: round(v, 3) for k, v in page.items()})
    if args.json:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"{key:18} {value}")


if __name__ == "__main__":
    main()
