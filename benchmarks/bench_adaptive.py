"""Adaptive runs on simulated agents of known pass probability: verdicts, error rates, runs saved.

    python benchmarks/bench_adaptive.py [--cases 2000] [--trials 20000] [--seed 13] [--json FILE]

Curtailment (``--adaptive``): for each plan (R runs, k passes needed) and pass probability p,
``--cases`` simulated cases each draw all R outcomes; the full verdict (passes ≥ k) is compared
with the curtailed one (outcomes fed in order until decided). Prints mismatches (must be 0),
mean runs used and the share saved, beside the exact expectation.

SPRT (``--adaptive=sequential``): for each stated (p0, p1, alpha, beta, R), ``--trials`` cases
at p = p0 and at p = p1: the observed false-pass rate at p0 and false-fail rate at p1 with
their standard errors, the stated rates, the exact ones (``operating_characteristics``),
inconclusive shares and mean runs. A simulation, not a timing: the figures do not depend on
the machine.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

from farm.stats.adaptive import Curtailment, Sprt, StoppingRule, operating_characteristics

PLANS = [(10, 7), (20, 16), (50, 40), (50, 50), (100, 95)]
"""(R, k): success_ratio 7/10; --runs 20 --min-pass-rate 0.8; 50 at 0.8; 50 at 1.0; 100 at 0.95."""
PROBABILITIES = [0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0]
SPRTS = [Sprt(0.5, 0.9, 0.05, 0.1, 50), Sprt(0.7, 0.9, 0.05, 0.05, 100), Sprt(0.8, 0.95, 0.05, 0.1, 100),
         Sprt(0.6, 0.8, 0.01, 0.05, 200)]


def stop(rule: StoppingRule, outcomes: list[bool]) -> tuple[str, int]:
    passed = failed = 0
    for outcome in outcomes:
        passed, failed = passed + outcome, failed + (not outcome)
        decision = rule.decide(passed, failed)
        if decision is not None:
            return decision.verdict, decision.decided_after
    raise AssertionError("a rule must decide within its runs")


def curtailment(cases: int, rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    for runs, required in PLANS:
        rule = Curtailment(runs, required)
        for p in PROBABILITIES:
            mismatches, used = 0, 0
            for _ in range(cases):
                outcomes = [rng.random() < p for _ in range(runs)]
                verdict, after = stop(rule, outcomes)
                mismatches += verdict != ("pass" if sum(outcomes) >= required else "fail")
                used += after
            exact = operating_characteristics(rule, p).expected_runs
            rows.append({"runs": runs, "required": required, "p": p, "cases": cases, "mismatches": mismatches,
                         "mean_runs": used / cases, "exact_runs": exact, "saved": 1 - used / (cases * runs)})
    return rows


def sprt(trials: int, rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    for test in SPRTS:
        row: dict[str, Any] = {"p0": test.p0, "p1": test.p1, "alpha": test.alpha, "beta": test.beta,
                               "runs": test.runs, "trials": trials}
        for p, wrong, name in ((test.p0, "pass", "at_p0"), (test.p1, "fail", "at_p1")):
            verdicts: dict[str, int] = {"pass": 0, "fail": 0, "inconclusive": 0}
            used = 0
            for _ in range(trials):
                verdict, after = stop(test, [rng.random() < p for _ in range(test.runs)])
                verdicts[verdict] += 1
                used += after
            rate = verdicts[wrong] / trials
            exact = operating_characteristics(test, p)
            row[name] = {"error": rate, "se": math.sqrt(rate * (1 - rate) / trials),
                         "exact_error": exact.p_pass if wrong == "pass" else exact.p_fail,
                         "inconclusive": verdicts["inconclusive"] / trials, "mean_runs": used / trials,
                         "saved": 1 - used / (trials * test.runs)}
        rows.append(row)
    return rows


def print_tables(curtailed: list[dict[str, Any]], sequential: list[dict[str, Any]]) -> None:
    print("| R | k | p | mismatches | mean runs (exact) | saved |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in curtailed:
        print(f"| {r['runs']} | {r['required']} | {r['p']} | {r['mismatches']} / {r['cases']} | "
              f"{r['mean_runs']:.1f} ({r['exact_runs']:.1f}) | {r['saved']:.0%} |")
    print()
    print("| p0, p1, α, β, R | false pass at p0: observed ± se (exact) | false fail at p1 | "
          "inconclusive p0 / p1 | mean runs p0 / p1 | saved p0 / p1 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in sequential:
        a, b = r["at_p0"], r["at_p1"]
        print(f"| {r['p0']}, {r['p1']}, {r['alpha']}, {r['beta']}, {r['runs']} | "
              f"{a['error']:.4f} ± {a['se']:.4f} ({a['exact_error']:.4f}) | "
              f"{b['error']:.4f} ± {b['se']:.4f} ({b['exact_error']:.4f}) | "
              f"{a['inconclusive']:.3f} / {b['inconclusive']:.3f} | {a['mean_runs']:.1f} / {b['mean_runs']:.1f} | "
              f"{a['saved']:.0%} / {b['saved']:.0%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--trials", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    curtailed, sequential = curtailment(args.cases, rng), sprt(args.trials, rng)
    print_tables(curtailed, sequential)
    if args.json:
        args.json.write_text(json.dumps({"curtailment": curtailed, "sprt": sequential}, indent=2))
    if any(r["mismatches"] for r in curtailed):
        sys.exit("curtailment changed a verdict")


if __name__ == "__main__":
    main()
