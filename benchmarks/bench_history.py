"""The history store's speed on SQLite (and PostgreSQL with ``--postgres URL``): recording, trend reads.

    python benchmarks/bench_history.py [--repeat 3] [--postgres postgresql+psycopg://…/db] [--json FILE]

- record: one sweep of 1,000 cases × 25 runs (25,000 runs' case results), and one of 25,000
  cases × 1 run (25,000 case rows), into a database that already holds the schema (target:
  under 2 s on SQLite);
- trend: one case's pass rate over the last 90 sweeps, read from a history of 90 sweeps × 1,000
  cases (90,000 case rows), through ``farm.history.trends.case_trend`` (target: under 50 ms).

Medians of ``--repeat`` measurements (trend: of 50 reads after one warm-up read).
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

from farm.history.store import HistoryStore
from farm.history.trends import case_trend
from farm.models import CaseStats, FailureReason, StabilityClass, SweepReport, SweepSummary


def synthetic_sweep(sweep_id: str, day: int, cases: int, runs: int) -> SweepReport:
    """A report of ``cases`` cases × ``runs`` runs; every 7th case flaky (its reasons recorded)."""
    results = []
    for i in range(cases):
        passed = runs - (i % 3 if i % 7 == 0 else 0)
        results.append(CaseStats(
            id=f"suite-{i % 10}/case-{i:05d}", suite=f"suite-{i % 10}", source=f"tests/suite-{i % 10}.jsonl",
            runs=runs, passed=passed, failed=runs - passed, pass_rate=round(100 * passed / runs, 1),
            pass_rate_ci=(80.0, 100.0), consistency=1.0, stable=passed == runs,
            stability_class=StabilityClass.STABLE if passed == runs else StabilityClass.MOSTLY_STABLE,
            label="stable" if passed == runs else "flaky", required_passes=runs, case_passed=passed == runs,
            avg_duration_ms=120.0, min_duration_ms=80.0, max_duration_ms=300.0, std_deviation_ms=20.0,
            distinct_outputs=1 + runs - passed, content_hash=f"{i:016x}",
            failure_reasons=[FailureReason(reason="equals: expected 'ok'", count=runs - passed)] if passed < runs
            else [], pass_at_k={"1": passed / runs, "5": None}, pass_hat_k={"1": passed / runs, "5": None}))
    summary = SweepSummary(total_cases=cases, total_runs=cases * runs, runs_per_case=runs, overall_pass_rate=95.0,
                           stable_cases=0, unstable_cases=0, passed_cases=0, failed_cases=0, skipped_cases=0,
                           flaky_cases=0, broken_cases=0, duration_ms=1000.0, by_status={})
    metadata = {"sweep_id": sweep_id, "started_at": f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T02:00:00Z",
                "agent_id": "bench", "tags": {"trigger": "nightly"}, "suites": {"tests/suite-0.jsonl": "0" * 64}}
    return SweepReport(summary=summary, environment={}, results=results, metadata=metadata)


def time_record(store: HistoryStore, cases: int, runs: int, repeat: int, label: str) -> list[float]:
    times = []
    for n in range(repeat):
        report = synthetic_sweep(f"{label}-{n}", n, cases, runs)
        start = time.perf_counter()
        store.record(report)
        times.append(time.perf_counter() - start)
    return times


def time_trend(store: HistoryStore, sweeps: int, cases: int) -> tuple[list[float], float]:
    start = time.perf_counter()
    for day in range(sweeps):
        store.record(synthetic_sweep(f"trend-{day:03d}", day, cases, 10))
    filled = time.perf_counter() - start
    case_id = f"suite-0/case-{cases // 2:05d}"
    case_trend(store.engine, case_id, last=90)  # warm-up: connection, statement cache
    times = []
    for _ in range(50):
        start = time.perf_counter()
        points = case_trend(store.engine, case_id, last=90)
        times.append(time.perf_counter() - start)
    assert len(points) == min(90, sweeps), len(points)
    return times, filled


def measure(url: str, repeat: int) -> dict[str, Any]:
    store = HistoryStore.open(url)  # migrated here, not inside the timed calls
    try:
        by_runs = time_record(store, 1000, 25, repeat, "cases1000x25")
        by_cases = time_record(store, 25_000, 1, repeat, "cases25000x1")
        trend, filled = time_trend(store, 90, 1000)
    finally:
        store.close()
    return {"record_1000x25_s": statistics.median(by_runs), "record_25000x1_s": statistics.median(by_cases),
            "trend_90_ms": 1000 * statistics.median(trend), "trend_90_max_ms": 1000 * max(trend),
            "fill_90x1000_s": filled}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", default=None, metavar="URL", help="also measure this (empty) PostgreSQL db")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        figures["sqlite"] = measure(f"sqlite:///{tmp}/history.sqlite", args.repeat)
    if args.postgres:
        figures["postgresql"] = measure(args.postgres, args.repeat)
    for backend, f in figures.items():
        print(f"{backend}: record 1,000 cases × 25 runs {f['record_1000x25_s']:.3f} s; "
              f"25,000 cases × 1 run {f['record_25000x1_s']:.3f} s (target < 2 s)")
        print(f"{backend}: trend of one case over 90 sweeps (90,000 rows) {f['trend_90_ms']:.2f} ms median, "
              f"{f['trend_90_max_ms']:.2f} ms max (target < 50 ms); filling took {f['fill_90x1000_s']:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
