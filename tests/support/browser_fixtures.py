"""Helpers for the HTML report tests and benchmark: hand-built reports and headless Chromium.

Reports are built straight from the pydantic models (not through ``farm.stats``) so the
renderer is tested on exactly the data a test chooses.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from farm.models import (
    CaseStats,
    CheckOutcome,
    FailureReason,
    RunDetail,
    RunStatus,
    StabilityClass,
    SweepReport,
    SweepSummary,
)

CHROMIUM = os.environ.get("FARM_CHROMIUM", "/usr/bin/chromium")
"""Debian's Chromium; never ``playwright install`` (no downloads on these machines)."""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str | None:
    """The Chromium binary, or None when it is not installed."""
    if os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    return shutil.which("chromium")


def launch_chromium(playwright: Any) -> Any:
    """A headless Chromium browser from a ``sync_playwright()`` handle."""
    return playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)


@contextlib.contextmanager
def headless_chromium() -> Iterator[Any]:
    """A headless Chromium; without playwright or Chromium, skip locally and fail in CI (a CI run
    must not silently lose the browser tests)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    missing = ("the playwright package is not installed" if sync_playwright is None
               else "Chromium is not installed (apt-get install chromium)" if chromium_path() is None else None)
    if missing is not None and os.environ.get("CI"):
        pytest.fail(missing)
    if missing is not None:
        pytest.skip(missing)
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            yield browser
        finally:
            browser.close()


class Opened:
    """A report opened in a fresh page, with everything the page tried to do recorded."""

    def __init__(self, browser: Any, path: Path, ready: str | None = "html[data-ready]") -> None:
        self.url = path.as_uri()
        self.requests: list[str] = []
        self.blocked: list[str] = []
        self.dialogs: list[str] = []
        self.problems: list[str] = []
        self.context = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
        self.context.route("**/*", self._route)
        self.page = page = self.context.new_page()
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: self.problems.append(str(e)))
        page.on("console", lambda m: m.type in ("error", "warning") and self.problems.append(m.text))
        page.goto(self.url)
        if ready:  # pages with a script say when it has run
            page.wait_for_selector(ready)

    def _route(self, route: Any) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()

    def indices(self) -> list[int]:
        return [int(i) for i in self.page.eval_on_selector_all(
            "#rows tr.case-row", "rows => rows.map(r => r.dataset.index)")]


def run(n: int, status: str = "passed", ms: float = 100.0, output: Any = "ok", **extra: Any) -> RunDetail:
    """One run detail; failed runs get a failing ``equals`` check unless given their own."""
    if status == "failed" and "failed_checks" not in extra:
        extra["failed_checks"] = [
            CheckOutcome(name="equals", passed=False, message="output differs", actual=output, expected="ok")
        ]
    return RunDetail(run=n, status=RunStatus(status), duration_ms=ms, output=output, **extra)


def wilson(passed: int, total: int) -> tuple[float, float]:
    """95 % Wilson interval, in percent."""
    if total == 0:
        return (0.0, 0.0)
    z, p = 1.959964, passed / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return (round(100 * max(0.0, centre - half), 2), round(100 * min(1.0, centre + half), 2))


def case_stats(case_id: str, runs: list[RunDetail], **fields: Any) -> CaseStats:
    """A case's statistics computed from its runs (SPEC 7), ``fields`` overriding any."""
    counted = [r for r in runs if r.status != RunStatus.SKIPPED]
    passed = sum(r.status == RunStatus.PASSED for r in counted)
    rate = 100.0 * passed / len(counted) if counted else 0.0
    durations = [r.duration_ms for r in counted] or [0.0]
    avg = sum(durations) / len(durations)
    outputs = Counter(repr(r.output) for r in counted)
    label = "skipped" if not counted else "stable" if rate == 100 else "broken" if rate == 0 else "flaky"
    values: dict[str, Any] = {
        "id": case_id, "suite": "suite", "input": f"input of {case_id}", "runs": len(runs),
        "passed": passed, "failed": len(counted) - passed, "skipped": len(runs) - len(counted),
        "errors": sum(r.status == RunStatus.ERROR for r in runs),
        "timeouts": sum(r.status == RunStatus.TIMEOUT for r in runs),
        "pass_rate": round(rate, 2), "pass_rate_ci": wilson(passed, len(counted)),
        "consistency": max(outputs.values()) / len(counted) if counted else 1.0,
        "stable": rate == 100, "stability_class": _stability(rate), "label": label,
        "required_passes": len(counted), "case_passed": not counted or passed == len(counted),
        "avg_duration_ms": avg, "min_duration_ms": min(durations), "max_duration_ms": max(durations),
        "std_deviation_ms": math.sqrt(sum((d - avg) ** 2 for d in durations) / len(durations)),
        "run_details": runs,
    }
    values.update(fields)
    return CaseStats(**values)


def _stability(rate: float) -> StabilityClass:
    if rate >= 100:
        return StabilityClass.STABLE
    if rate >= 80:
        return StabilityClass.MOSTLY_STABLE
    return StabilityClass.UNSTABLE if rate >= 50 else StabilityClass.HIGHLY_UNSTABLE


def sweep_report(cases: list[CaseStats], **metadata: Any) -> SweepReport:
    """A report over ``cases`` with a summary computed from them."""
    by_status: Counter[str] = Counter()
    for case in cases:
        by_status.update(r.status.value for r in case.run_details)
    counted = [c for c in cases if c.label != "skipped"]
    total_runs = sum(c.runs for c in cases)
    summary = SweepSummary(
        total_cases=len(cases), total_runs=total_runs,
        runs_per_case=max((c.runs for c in cases), default=0),
        overall_pass_rate=round(100 * by_status["passed"] / max(1, total_runs - by_status["skipped"]), 2),
        stable_cases=sum(c.stable for c in counted), unstable_cases=sum(not c.stable for c in counted),
        passed_cases=sum(c.case_passed for c in counted),
        failed_cases=sum(not c.case_passed for c in counted),
        skipped_cases=len(cases) - len(counted),
        flaky_cases=sum(c.label == "flaky" for c in cases),
        broken_cases=sum(c.label == "broken" for c in cases),
        duration_ms=sum(c.avg_duration_ms * c.runs for c in cases) / 4, by_status=dict(by_status),
    )
    meta = {"sweep_id": "sw-test", "agent_id": "keyword", "comparison": "documented", "version": "0.1.0"}
    meta.update(metadata)
    environment = {"user_id": "test-user", "team_id": "test-team", "locale": "en-us"}
    return SweepReport(summary=summary, environment=environment, results=cases, metadata=meta)


def make_report(sweep_id: str, started: str, cases: dict[str, tuple[int, int]], **meta: Any) -> SweepReport:
    """A report whose case ``id`` passed ``passed`` of ``runs`` runs."""
    stats = []
    for case_id, (passed, runs) in cases.items():
        details = [run(n, "passed" if n <= passed else "failed") for n in range(1, runs + 1)]
        failing = FailureReason(reason="equals: expected 'ok'", count=runs - passed, failure_class="assertion:equals")
        reasons = [failing] if passed < runs else []
        stats.append(case_stats(case_id, details, content_hash=f"h-{case_id}", failure_reasons=reasons,
                                pass_at_k={"1": passed / runs}, pass_hat_k={"1": passed / runs}))
    return sweep_report(stats, sweep_id=sweep_id, started_at=started, completed_at=started, **meta)


def synthetic_report(n_cases: int, runs: int, seed: int = 0) -> SweepReport:
    """A realistic large sweep: mostly stable cases, some flaky and broken, a few errors."""
    rng = random.Random(seed)
    cases = []
    for i in range(n_cases):
        fail_p = rng.choice([0.0] * 14 + [0.1, 0.3, 0.5, 1.0])
        details = []
        for n in range(1, runs + 1):
            ms = rng.lognormvariate(6.5, 0.4)
            if rng.random() >= fail_p:
                details.append(run(n, "passed", ms, {"answer": f"reply {i}", "keywords": ["ai", "ml"]}))
            elif rng.random() < 0.2:
                details.append(run(n, "error", ms, None, error=f"AgentError: connection reset (case {i})"))
            else:
                details.append(run(n, "failed", ms, {"answer": f"wrong {i}.{n}", "keywords": ["ai"]}))
        cases.append(case_stats(f"suite-{i % 7}/case-{i:04d}", details, suite=f"suite-{i % 7}",
                                source=f"tests/suite-{i % 7}.jsonl",
                                input=f"Extract the keywords from text number {i}.",
                                expected={"keywords": ["ai", "ml"]}))
    return sweep_report(cases, started_at="2025-01-01T10:00:00Z", completed_at="2025-01-01T10:07:12Z")
