"""Retry bias (SPEC 18): runs that needed a transient retry against runs that did not, per case
(Fisher's exact test, BH across cases). End to end against a real HTTP agent that answers 503
first to some runs and answers those worse; and on 200 simulated sweeps for the error rates."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from farm.cli import main
from farm.reports import parse_json_report
from tests.support.simulated_retries import measure

RIGHT_IN_TEN = {"biased": (3, 9), "fair": (9, 9)}
"""Per case: right answers in ten (retried runs, clean runs)."""


class BiasedAgent(ThreadingHTTPServer):
    """Every other run's first call gets a 503 (Retry-After: 0); a case's retried runs and its clean
    runs are right in a fixed share of ten, counted in arrival order (exact whatever the order)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        self.counts: Counter[tuple[str, str]] = Counter()


class _Handler(BaseHTTPRequestHandler):
    server: BiasedAgent

    def log_message(self, *args: object) -> None:
        return None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        context = body["context"]
        case = str(body["messages"][-1]["content"])
        run_key = f"{case}/{context.get('chat_id')}"
        with self.server.lock:
            first = run_key not in self.server.seen
            self.server.seen.add(run_key)
            if first:
                self.server.counts[(case, "first")] += 1
                fail_first = self.server.counts[(case, "first")] % 2 == 0
            kind = "retried" if not first else "clean"
            if first and fail_first:
                kind = ""
            else:
                self.server.counts[(case, kind)] += 1
                n = self.server.counts[(case, kind)]
        if not kind:
            self._send(503, b"busy", {"Retry-After": "0"})
            return
        right = RIGHT_IN_TEN[case][0 if kind == "retried" else 1]
        text = "yes" if (n - 1) % 10 < right else "no"
        self._send(200, json.dumps({"text": text}).encode(), {"Content-Type": "application/json"})

    def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def biased_agent() -> Iterator[str]:
    server = BiasedAgent()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/agent"
    finally:
        server.shutdown()
        server.server_close()


def test_retried_runs_that_pass_less_are_flagged_and_fair_ones_are_not(biased_agent: str, tmp_path: Path) -> None:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": c, "input": c, "expected": "yes"}) + "\n" for c in RIGHT_IN_TEN))
    result = CliRunner().invoke(main, ["test", "--no-progress", "-i", str(suite), "-n", biased_agent, "--runs", "40",
                                       "--no-history", "-o", str(tmp_path / "r.json"), "-o", str(tmp_path / "r.md"),
                                       "-o", str(tmp_path / "r.html"), "--min-pass-rate", "0"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = parse_json_report((tmp_path / "r.json").read_text())
    bias = {c.id: c.retry_bias for c in report.results}
    biased, fair = bias["biased"], bias["fair"]
    assert biased is not None and fair is not None
    assert (biased["retried_runs"], biased["retried_pass_rate"], biased["clean_pass_rate"]) == (20, 30.0, 90.0)
    assert biased["flagged"] is True and isinstance(biased["q"], float) and biased["q"] < 0.01
    assert (fair["retried_runs"], fair["retried_pass_rate"], fair["clean_pass_rate"]) == (20, 90.0, 90.0)
    assert fair["flagged"] is False and fair["q"] == 1.0
    assert ("retry bias: 40 runs of 2 cases needed a transient retry; 1 pass at a different rate when retried: "
            "biased (30.0% retried vs 90.0% clean") in result.output
    assert report.written_metadata()["retry_bias"]["flagged"] == ["biased"]
    markdown = (tmp_path / "r.md").read_text()
    assert "| Retry Bias | retry bias: 40 runs of 2 cases needed a transient retry; 1 pass" in markdown
    html = (tmp_path / "r.html").read_text()
    assert 'id="retry-bias"' in html and report.written_metadata()["retry_bias"]["line"] in html


@pytest.mark.browser
def test_the_html_report_shows_the_sweep_line_in_chromium(tmp_path: Path) -> None:
    import numpy as np

    from farm.reports.outputs import write_report
    from farm.stats.sweep import build_report
    from tests.support.browser_fixtures import Opened, headless_chromium
    from tests.support.simulated_retries import SimulatedCase, simulated_stats

    stats = simulated_stats([SimulatedCase(0.3, 0.9), SimulatedCase(0.9, 0.9)], 60, np.random.default_rng(30))
    report = build_report(stats, duration_ms=1.0, runs_per_case=60, environment={}, metadata={"sweep_id": "s"})
    assert report.written_metadata()["retry_bias"]["flagged"] == ["c0"]
    write_report(report, tmp_path / "r.html")
    with headless_chromium() as browser:
        opened = Opened(browser, tmp_path / "r.html")
        try:
            panel = opened.page.locator("#retry-bias")
            assert panel.is_visible() and "tone-warn" in (panel.get_attribute("class") or "")
            text = panel.text_content() or ""
            assert "Retry bias" in text and "1 pass at a different rate when retried: c0 (" in text
            assert opened.problems == [] and opened.blocked == []
        finally:
            opened.context.close()


def test_no_retried_run_means_no_retry_bias_figures(tmp_path: Path) -> None:
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "a", "expected": "yes"}) + "\n")
    agent = f"py:{Path(__file__).resolve().parents[1] / 'agents' / 'quality.py'}:quality"
    result = CliRunner().invoke(main, ["test", "--no-progress", "-i", str(suite), "-n", agent, "--runs", "3",
                                       "--no-history", "-o", str(tmp_path / "r.json")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = parse_json_report((tmp_path / "r.json").read_text())
    assert report.results[0].retry_bias is None and "retry_bias" not in report.written_metadata()
    assert "retry bias" not in result.output


def test_error_rates_over_200_simulated_sweeps() -> None:
    """One case whose retried runs pass 30 % (clean 90 %, a run retried with chance 0.3) among nine
    at 90 % either way, 50 runs each; and sweeps of ten cases at 90 % either way. Measured (seed 30):
    flagged in 184 of 200 sweeps (92 %); a false alarm (an unbiased case flagged) in 4 of 200 (2 %)
    beside the biased case, in 1 of 200 (0.5 %) with no biased case. See benchmarks/README.md."""
    rates = measure(200)
    assert rates.biased_flagged >= 180
    assert rates.false_alarms <= 10 and rates.null_alarms <= 10
