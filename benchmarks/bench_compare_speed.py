"""``farm compare`` of two JSON reports, whole processes: wall, CPU, peak RSS (issue 45).

    python benchmarks/bench_compare_speed.py [--repeat 3] [--before REV] [--json FILE]

Two report pairs, written once to a temporary directory by ``write_json`` (as ``farm test -o``
writes them), BASE and HEAD drawn with different seeds (tests.support.browser_fixtures.synthetic_report:
mostly stable cases, some flaky and broken):

- 1,000 cases × 50 runs a side, every run's details kept (~35 MB a file);
- 1,000 cases × 1,000 runs a side: 100 runs' details kept a case (the farm's default), the counts
  of 1,000 runs drawn at each case's pass rate (~70 MB a file).

``--before REV`` measures that commit's farm beside this checkout's, alternating, in the same run.
At 1,000 runs the commit before issue 45 needs scipy's test per table (~10 s each): it is not run
whole; its time is projected from scipy's time on ``--sample`` of the tables, times the tables a
compare tests (both directions, repeats memoised).
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import harness

sys.path.insert(0, str(harness.ROOT))

from farm.reports.json_report import write_json
from tests.support.browser_fixtures import synthetic_report


def write_pair(into: Path, runs: int, kept: int) -> tuple[Path, Path]:
    paths = []
    for seed, name in ((0, "base"), (1, "head")):
        report = synthetic_report(1000, kept, seed=seed)
        if runs != kept:
            rng = random.Random(seed)
            results = []
            for case in report.results:
                passed = sum(rng.random() * 100 < case.pass_rate for _ in range(runs))
                results.append(case.model_copy(update={"runs": runs, "passed": passed, "failed": runs - passed,
                                                       "errors": 0, "run_details_truncated": runs - kept}))
            report = report.model_copy(update={"results": results})
        path = into / f"{name}-{runs}.json"
        with path.open("w", encoding="utf-8") as out:
            write_json(report, out)
        paths.append(path)
    return paths[0], paths[1]


def export(rev: str, into: Path) -> Path:
    """``rev``'s ``farm`` package in ``into``, compiled (as pip compiles an installed farm)."""
    archive = subprocess.run(["git", "-C", str(harness.ROOT), "archive", rev, "farm"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into / "farm")], check=True)
    return into


def run_compare(base: Path, head: Path, code: Path | None) -> harness.Measured:
    env = harness.bench_env()
    if code is not None:
        env["PYTHONPATH"] = f"{code}:{env['PYTHONPATH']}"
    # run from the reports' directory: ``-m`` puts the working directory first on the path
    measured = harness.measure([sys.executable, "-m", "farm", "compare", base.name, head.name], env=env,
                               cwd=base.parent)
    if measured.returncode not in (0, 1):
        raise SystemExit(f"farm compare failed ({measured.returncode}): {measured.stderr_tail}")
    return measured


def scipy_projection(base: Path, head: Path, sample: int) -> tuple[float, int]:
    """(seconds a table of scipy's test takes, median of ``sample``; tables a compare tests)."""
    from farm.reports.json_report import parse_json_report
    from farm.stats.significance import p_head_lower

    sides = [parse_json_report(p.read_text(encoding="utf-8"), details=False).results for p in (base, head)]
    tables = set()
    for b, h in zip(*sides, strict=True):
        tables.add((h.passed, h.runs, b.passed, b.runs))
        tables.add((b.passed, b.runs, h.passed, h.runs))
    times = []
    for table in sorted(tables)[:: max(1, len(tables) // sample)][:sample]:
        start = time.perf_counter()
        p_head_lower.__wrapped__(*table)
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(tables)


def main() -> None:
    parser = harness.parser(__doc__ or "")
    parser.add_argument("--before", default=None, metavar="REV", help="also measure this commit's farm")
    parser.add_argument("--sample", type=int, default=3, help="tables timed with scipy for the 1,000-run projection")
    args = parser.parse_args()
    figures: dict[str, object] = {}
    with harness.workdir("compare") as tmp:
        before = None
        if args.before:
            (tmp / "before").mkdir()
            before = export(args.before, tmp / "before")
        pairs = {50: write_pair(tmp, 50, 50), 1000: write_pair(tmp, 1000, 100)}
        rows = []
        for runs, (base, head) in pairs.items():
            codes = {"this": None} | ({"before": before} if before is not None and runs == 50 else {})
            measured: dict[str, list[harness.Measured]] = {name: [] for name in codes}
            for _ in range(args.repeat):
                for name, code in codes.items():
                    measured[name].append(run_compare(base, head, code))
            for name, runs_measured in measured.items():
                walls = [m.wall_s for m in runs_measured]
                rss = [m.peak_rss_mb for m in runs_measured]
                cpu = [m.cpu_s for m in runs_measured]
                figures[f"{name}_{runs}"] = {"wall_s": walls, "cpu_s": cpu, "peak_rss_mb": rss}
                rows.append([f"1,000 cases × {runs} runs", name, harness.spread(walls), harness.spread(cpu),
                             harness.spread(rss)])
            if before is not None and runs == 1000:
                per_table, tables = scipy_projection(base, head, args.sample)
                figures["before_1000_projected_s"] = per_table * tables
                rows.append([f"1,000 cases × {runs} runs", "before (projected)",
                             f"{per_table * tables:.0f} ({tables} tables × {per_table:.1f} s)", "", ""])
        print(harness.table(["reports", "farm", "wall s", "CPU s", "peak RSS MB"], rows))
    harness.emit("compare_speed", figures, args.json_path)


if __name__ == "__main__":
    main()
