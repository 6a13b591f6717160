"""The semantic figures in the HTML report, in Chromium: the card, a case's facts and its clusters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from farm.models import SemanticCluster
from farm.reports.html import render_html
from tests.support.browser_fixtures import Opened, case_stats, headless_chromium, run, sweep_report

HOSTILE = "<img src=x onerror=window.__pwned=1>"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as chromium:
        yield chromium


@pytest.mark.browser
def test_clusters_of_meaning_are_shown_as_text(browser: Any, tmp_path: Path) -> None:
    clusters = [SemanticCluster(count=3, share=0.75, example="Paris is the capital of France."),
                SemanticCluster(count=1, share=0.25, example=HOSTILE)]
    stats = case_stats("paris", [run(n, output=f"answer {n}") for n in range(1, 5)], semantic_consistency=0.75,
                       semantic_clusters=clusters, semantic_status="computed")
    report = sweep_report([stats])
    report.summary.semantic = "computed"
    path = tmp_path / "r.html"
    path.write_text(render_html(report), encoding="utf-8")
    opened = Opened(browser, path)
    try:
        page = opened.page
        assert "Semantic consistency" in page.locator(".cards").inner_text()
        page.locator("#rows tr.case-row").first.click()
        detail = page.locator("tr.detail-row")
        assert "75% in the largest of 2 clusters of meaning" in detail.inner_text()
        assert "meanings" in detail.inner_text().lower()  # h3 headings are upper-cased by CSS
        assert page.get_by_text(HOSTILE, exact=True).count() == 1  # an answer is text, never markup
        assert page.evaluate("typeof window.__pwned") == "undefined" and opened.problems == []
    finally:
        opened.context.close()
