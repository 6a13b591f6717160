"""Matrix sweeps (SPEC 22, issue 41): the wall time of a 3-arm matrix against the three sweeps run
one after another, and how often identical arms get a false ``worse``.

    python benchmarks/bench_matrix.py [--cases 100] [--runs 20] [--repeat 3] [--no-distributed]
                                      [--trials 500] [--json FILE]

Timing: a matrix of three arms (one agent each: ``benchmarks/agents/zero_agent.py``'s
coroutine, so the farm's own cost is all there is to compare) over ``--cases`` cases × ``--runs`` runs, against
the three sweeps of one arm each, one after another: in-process (``farm test`` as a library
call, JSONL to a file, ``--parallel 8``) and distributed (one private redis-server and one
``farm worker`` process, the submitter in this process). The target is ≤ 1.1× (the matrix adds
planning per arm, the interleaved order and its report; one sweep instead of three saves
three starts). Medians of ``--repeat``.

False ``worse``: ``--trials`` matrices of three identical arms (every case of every arm at the
same pass probability, 20 cases × 20 runs) through the very code a matrix report is built by
(``farm.matrix.report.with_matrix``: ``farm compare``'s Boschloo tests and BH over an arm's
cases); prints the share of arms with at least one ``worse`` case (the compare promises at most
its alpha, 0.10, per arm: BH controls the false discovery rate, which is the family-wise rate
when nothing differs) and the share of cells. A simulation: the figures do not depend on the
machine.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

import harness

from farm.models import Arm, CaseStats, MatrixPlan, StabilityClass, SweepReport, SweepSummary
from farm.stats.measures import percent, wilson_percent

AGENT = f"py:{harness.AGENTS}/zero_agent.py:respond_async"
ARMS = ("a", "b", "c")


def _settings(suite: Path, out: Path, runs: int, broker: str | None, *, arms: tuple[str, ...] = (),
              name: str | None = None) -> Any:
    from farm.api import TestSettings
    from farm.matrix.arms import MatrixFlags

    return TestSettings(input=str(suite), name=name, runs=runs, parallel=8, outputs=(str(out),), broker=broker,
                        cwd=str(harness.ROOT), matrix=MatrixFlags(arms))


def _sweep(settings: Any, out: Path) -> float:
    from farm.api import create_executor, prepare_sweep
    from farm.sweep.observers import JsonlObserver, Observers

    wall0 = time.perf_counter()
    prepared = prepare_sweep(settings)
    with out.open("w", encoding="utf-8") as stream:
        report = create_executor(prepared.specs.executor).run(prepared.plan, Observers(JsonlObserver(stream)))
    if report.summary.by_status.get("passed") != report.summary.total_runs:
        raise RuntimeError(f"not every run passed: {report.summary.by_status}")
    return time.perf_counter() - wall0


def timing(suite: Path, out: Path, runs: int, broker: str | None, repeat: int) -> dict[str, Any]:
    arms = tuple(f"{name}={AGENT}" for name in ARMS)
    _sweep(_settings(suite, out, 1, broker, name=AGENT), out)  # warm imports (and the worker)
    matrix, serial = [], []
    for _ in range(repeat):
        serial.append(sum(_sweep(_settings(suite, out, runs, broker, name=AGENT), out) for _ in ARMS))
        matrix.append(_sweep(_settings(suite, out, runs, broker, arms=arms), out))
    ratio = harness.median(matrix) / harness.median(serial)
    return {"matrix_s": matrix, "three_sweeps_s": serial, "ratio": ratio}


def _case(case_id: str, arm: str, runs: int, passed: int) -> CaseStats:
    return CaseStats(id=case_id, arm=arm, runs=runs, passed=passed, failed=runs - passed,
                     pass_rate=percent(passed, runs), pass_rate_ci=wilson_percent(passed, runs), consistency=1.0,
                     stable=passed == runs,
                     stability_class=StabilityClass.STABLE, label="flaky", required_passes=runs,
                     case_passed=passed == runs, avg_duration_ms=1.0, min_duration_ms=1.0, max_duration_ms=1.0,
                     std_deviation_ms=0.0)


def false_worse(trials: int, cases: int = 20, runs: int = 20, seed: int = 41) -> dict[str, Any]:
    """Identical arms through ``with_matrix``: arms with a false ``worse``, and cells."""
    from farm.matrix.report import with_matrix

    rng = random.Random(seed)
    plan = MatrixPlan(arms=[Arm(name=n, agent="x") for n in ARMS], baseline=ARMS[0])
    summary = SweepSummary(total_cases=0, total_runs=0, runs_per_case=runs, overall_pass_rate=0, stable_cases=0,
                           unstable_cases=0, passed_cases=0, failed_cases=0, skipped_cases=0, flaky_cases=0,
                           broken_cases=0, duration_ms=0, by_status={})
    arms_hit = cells_worse = cells = 0
    for _ in range(trials):
        p = [rng.choice((0.5, 0.7, 0.8, 0.9)) for _ in range(cases)]
        results = [_case(f"c{i}", arm, runs, sum(rng.random() < p[i] for _ in range(runs)))
                   for i in range(cases) for arm in ARMS]
        report = with_matrix(SweepReport(summary=summary, environment={}, results=results, metadata={}), plan)
        assert report.matrix is not None
        arms_hit += sum(1 for arm in ARMS[1:] if report.matrix.worse[arm])
        cells_worse += sum(report.matrix.worse.values())
        cells += cases * (len(ARMS) - 1)
    compared = trials * (len(ARMS) - 1)
    return {"trials": trials, "arms_compared": compared, "arms_with_false_worse": arms_hit,
            "arm_rate": arms_hit / compared, "cells": cells, "false_worse_cells": cells_worse,
            "cell_rate": cells_worse / cells}


def main() -> int:
    p = harness.parser(__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=100)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--no-distributed", action="store_true")
    p.add_argument("--trials", type=int, default=500)
    args = p.parse_args()
    harness.sigterm_as_interrupt()
    figures: dict[str, Any] = {"false_worse": false_worse(args.trials)}
    fw = figures["false_worse"]
    print(f"identical arms: {fw['arms_with_false_worse']} of {fw['arms_compared']} arms had a false worse "
          f"({fw['arm_rate']:.3f}; promised ≤ 0.10), {fw['false_worse_cells']} of {fw['cells']} cells "
          f"({fw['cell_rate']:.4f})")
    with harness.workdir("matrix") as work, harness.Processes(work) as procs:
        suite = harness.write_suite(work / "suite.jsonl", args.cases)
        out = work / "out.jsonl"
        figures["in_process"] = timing(suite, out, args.runs, None, args.repeat)
        if not args.no_distributed:
            import cluster

            broker = harness.start_redis(procs)
            cluster.farm_worker(procs, broker, "matrix", "-c", "8")
            cluster.wait_workers(broker, ["matrix"])
            figures["distributed"] = timing(suite, out, args.runs, broker, args.repeat)
    rows = [[where, f"{args.cases}×{args.runs}×3", harness.spread(f["matrix_s"]), harness.spread(f["three_sweeps_s"]),
             f"{f['ratio']:.3f}"] for where, f in figures.items() if where != "false_worse"]
    print(harness.table(["executor", "runs", "matrix s", "3 sweeps s", "ratio (≤ 1.1)"], rows))
    harness.emit("bench_matrix", figures, args.json_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
