"""The HTML report's load panels in Chromium (SPEC 25): the "Load bias" panel warns for a flagged
case, the "Quality under load" panel draws the ramp's curve, and a case's details say its load;
no script error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from farm.models import RunResult, RunStatus
from farm.reports.outputs import write_report
from farm.stats.ramp import RampTally
from farm.stats.sweep import build_report
from tests.support.browser_fixtures import Opened, headless_chromium
from tests.support.simulated_load import blind, sensitive, simulated_stats

pytestmark = pytest.mark.browser


def test_the_load_panels_and_a_case_s_load_in_chromium(tmp_path: Path) -> None:
    stats = simulated_stats("ramp", [sensitive(0.8, 4), blind(0.7)], 80, np.random.default_rng(3))
    report = build_report(stats, duration_ms=1.0, runs_per_case=80, environment={}, metadata={"sweep_id": "s"})
    assert report.summary.load_bias is not None and report.summary.load_bias.flagged == ["c0"]
    tally = RampTally([2, 4, 8, 16])
    for level, passed in enumerate((10, 10, 4, 2)):
        for run in range(10):
            tally.add(RunResult(case_id="c0", run=level * 10 + run + 1, duration_ms=100.0 * (level + 1),
                                status=RunStatus.PASSED if run < passed else RunStatus.FAILED), 40)
    report.summary.ramp = tally.figures(runs=10)
    write_report(report, tmp_path / "r.html")
    with headless_chromium() as browser:
        opened = Opened(browser, tmp_path / "r.html")
        try:
            panel = opened.page.locator("#load-bias")
            assert panel.is_visible() and "tone-warn" in (panel.get_attribute("class") or "")
            assert "c0 (" in (panel.text_content() or "")
            chart = opened.page.locator("#chart-ramp")
            assert chart.is_visible() and opened.page.locator("#chart-ramp g.ramp-point").count() == 4
            assert "16 in flight: 20.0% of 10 runs" in (opened.page.locator("#ramp").text_content() or "")
            opened.page.locator("#rows tr.case-row").first.click()
            assert "in flight:" in (opened.page.locator("tr.detail-row").first.text_content() or "")
            assert opened.problems == [] and opened.blocked == []
        finally:
            opened.context.close()
