"""Is ``--estimate``'s power what ``farm compare`` delivers? (issue 44, SPEC 25)

For one case with a recorded BASE (passed/runs) and a planned HEAD run count: the smallest drop
``farm.stats.power`` says compare detects with power 0.8; then HEAD sweeps simulated at that true
drop (seeded binomial draws) are compared with BASE by ``farm.stats.compare.compare`` itself, and
the share called ``regressed`` printed beside the claim (target: 0.80 ± 0.05). Also the runs
``--detect`` says a given drop needs, checked the same way.

    python benchmarks/bench_power.py [--trials 4000] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm.stats.compare import CaseSnapshot, SweepSnapshot, compare
from farm.stats.power import runs_to_detect, smallest_detectable_drop

ALPHA, MIN_DROP = 0.1, 10.0
SETUPS = [((19, 20), 20), ((48, 50), 50), ((45, 50), 100), ((190, 200), 200)]
DETECT = [((48, 50), 25.0), ((90, 100), 20.0)]


def detected_share(base: tuple[int, int], head_runs: int, drop: float, trials: int, rng: random.Random) -> float:
    p = base[0] / base[1] - drop / 100
    verdicts: dict[int, bool] = {}
    hits = 0
    for _ in range(trials):
        k = sum(rng.random() < p for _ in range(head_runs))
        if k not in verdicts:  # compare itself, once per distinct HEAD count
            snap = [SweepSnapshot(sweep_id=s, cases=[CaseSnapshot(id="c", runs=n, passed=x)])
                    for s, (x, n) in (("b", base), ("h", (k, head_runs)))]
            verdicts[k] = compare(*snap, alpha=ALPHA, min_drop=MIN_DROP).cases[0].verdict == "regressed"
        hits += verdicts[k]
    return hits / trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"alpha {ALPHA}, min drop {MIN_DROP} points, power 0.8 claimed; {args.trials} simulated HEAD sweeps each")
    print(f"{'BASE':>9} {'HEAD runs':>9} {'drop':>6} {'detected':>9} {'s':>6}")
    for base, head_runs in SETUPS:
        started = time.perf_counter()
        drop = smallest_detectable_drop(*base, head_runs, alpha=ALPHA, min_drop=MIN_DROP)
        share = detected_share(base, head_runs, drop, args.trials, rng) if drop is not None else float("nan")
        took = time.perf_counter() - started
        print(f"{base[0]:>4}/{base[1]:<4} {head_runs:>9} {drop!s:>6} {share:>9.3f} {took:>6.1f}")
    print("--detect: runs needed, then the share detected at those runs")
    for base, drop in DETECT:
        needed = runs_to_detect(*base, drop, alpha=ALPHA, min_drop=MIN_DROP)
        share = detected_share(base, needed, drop, args.trials, rng) if needed else float("nan")
        print(f"{base[0]:>4}/{base[1]:<4} drop {drop:g}: {needed} runs, detected {share:.3f}")


if __name__ == "__main__":
    main()
