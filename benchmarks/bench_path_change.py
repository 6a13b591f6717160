"""``farm compare``'s ``path_changed`` (SPEC 21) on simulated sweeps with known path distributions.

    python benchmarks/bench_path_change.py [--suites 200] [--cases 50] [--runs 30] [--trials 200] [--seed 1]

- False alarms: suites of ``--cases`` unchanged cases, each with 1–12 paths whose shares are
  drawn anew (flat Dirichlet), BASE and HEAD ``--runs`` runs each from the same shares; the share
  of suites in which any case is flagged (BH q ≤ 0.10 over the suite: at most 10 % promised).
- Power: the same cases with ``--cases`` − 1 unchanged and one whose HEAD takes a new path in
  30 % of its runs; the share of trials in which it is flagged, and how often the new path is the
  one named.

Counts only (machine-independent), plus the time per comparison. Pure: no servers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from farm.stats.path_change import PathCount, path_p_value, path_shift
from farm.stats.significance import bh_q_values

ALPHA = 0.10


def _case(rng: np.random.Generator) -> np.ndarray:
    return rng.dirichlet(np.ones(int(rng.integers(1, 13))))


def _counts(rng: np.random.Generator, shares: np.ndarray, runs: int, names: list[list[str]]) -> list[PathCount]:
    drawn = rng.multinomial(runs, shares)
    return [PathCount(path=names[i], count=int(n)) for i, n in enumerate(drawn) if n]


def _names(k: int) -> list[list[str]]:
    return [[f"tool{i}", "answer"] for i in range(k)]


def _suite(rng: np.random.Generator, cases: int, runs: int, shifted: bool) -> tuple[list[float], bool]:
    ps, named = [], False
    for n in range(cases):
        shares = _case(rng)
        names = _names(len(shares))
        base = _counts(rng, shares, runs, names)
        if shifted and n == 0:
            moved = np.append(shares * 0.7, 0.3)
            head = _counts(rng, moved, runs, [*names, ["new_tool", "answer"]])
            grew = path_shift(base, head)
            named = grew is not None and grew.path == ["new_tool", "answer"]
        else:
            head = _counts(rng, shares, runs, names)
        ps.append(path_p_value(base, head) or 1.0)
    return bh_q_values(ps), named


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", type=int, default=200)
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    alarms = cases_flagged = 0
    for _ in range(args.suites):
        qs, _named = _suite(rng, args.cases, args.runs, shifted=False)
        flagged = sum(q <= ALPHA for q in qs)
        alarms += flagged > 0
        cases_flagged += flagged
    alarm_s = time.perf_counter() - start
    found = named = 0
    for _ in range(args.trials):
        qs, was_named = _suite(rng, args.cases, args.runs, shifted=True)
        found += qs[0] <= ALPHA
        named += qs[0] <= ALPHA and was_named
    figures = {"false_alarm_rate": alarms / args.suites, "suites": args.suites, "cases_flagged": cases_flagged,
               "power": found / args.trials, "named_new_path": named / max(found, 1), "trials": args.trials,
               "ms_per_case": alarm_s / (args.suites * args.cases) * 1000}
    print(f"false alarms: {alarms}/{args.suites} suites = {figures['false_alarm_rate']:.1%} "
          f"({cases_flagged} of {args.suites * args.cases} cases)   target ≤ 10 %")
    print(f"power (new path in 30 % of runs, {args.runs} runs a side): {found}/{args.trials} = "
          f"{figures['power']:.1%}; the new path named in {figures['named_new_path']:.1%} of those found")
    print(f"time: {figures['ms_per_case']:.1f} ms per case compared")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
