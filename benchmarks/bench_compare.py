"""The comparison's error rates on simulated sweeps with known pass probabilities (issue 12).

    python benchmarks/bench_compare.py [--comparisons 200] [--trials 100] [--seed 1] [--json FILE]

- False alarms: 200 unchanged cases at 30 runs, pass probabilities uniform over 0.5–1.0, drawn
  anew for every comparison; the share of comparisons that call any case ``regressed``
  (target: at most 10 %).
- Power: 100 cases of which 50 drop from 95 % to 75 %, 50 runs each; the share of drops called
  ``regressed`` (target: at least 80 %) and the unchanged cases called ``regressed`` per suite
  (target: at most 3 of 50).

Also prints the time per comparison and how many tables scipy's own test settled (compare
computes every p-value in numpy and asks scipy only where a verdict could hang on the difference:
``farm.stats.significance.settled_p_lower``). Defaults: alpha 0.10, min drop 10 points (SPEC 12).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from farm.stats.significance import p_head_lower
from tests.support.simulated_sweeps import false_alarms, power


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--comparisons", type=int, default=200, help="false-alarm comparisons")
    parser.add_argument("--trials", type=int, default=100, help="power trials")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    start = time.perf_counter()
    alarms = false_alarms(comparisons=args.comparisons, cases=200, runs=30, seed=args.seed)
    alarm_s = time.perf_counter() - start
    memo = p_head_lower.cache_info()
    start = time.perf_counter()
    found = power(trials=args.trials, cases=100, dropping=50, runs=50, seed=args.seed)
    power_s = time.perf_counter() - start
    figures = {
        "false_alarm_rate": alarms.rate, "false_alarm_comparisons": alarms.comparisons,
        "false_alarm_cases_flagged": alarms.cases_flagged,
        "power": found.rate, "power_trials": found.trials,
        "unchanged_flagged_max": max(found.unchanged_flagged),
        "unchanged_flagged_mean": sum(found.unchanged_flagged) / len(found.unchanged_flagged),
        "seconds_per_comparison_200x30": alarm_s / alarms.comparisons,
        "seconds_per_comparison_100x50": power_s / found.trials,
        "scipy_tables_200x30": memo.misses,
    }
    rows = [
        ("false alarms: 200 unchanged × 30 runs, p ∈ [0.5, 1]",
         f"{alarms.flagged}/{alarms.comparisons} = {alarms.rate:.1%} ({alarms.cases_flagged} cases)", "≤ 10 %",
         alarms.rate <= 0.10),
        ("power: 50 of 100 drop 95 → 75 %, 50 runs", f"{found.drops_flagged}/{found.drops} = {found.rate:.1%}",
         "≥ 80 %", found.rate >= 0.80),
        ("… unchanged cases flagged per suite", f"max {max(found.unchanged_flagged)}, mean "
         f"{figures['unchanged_flagged_mean']:.2f}", "≤ 3 of 50", max(found.unchanged_flagged) <= 3),
        ("time per comparison, 200 × 30", f"{figures['seconds_per_comparison_200x30'] * 1000:.0f} ms "
         f"(scipy settled {memo.misses} tables)", "", None),
        ("time per comparison, 100 × 50", f"{figures['seconds_per_comparison_100x50'] * 1000:.0f} ms", "", None),
    ]
    for name, value, target, met in rows:
        mark = "" if met is None else ("yes" if met else "NO")
        print(f"{name:<52} {value:<34} {target:<10} {mark}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
