"""Retry bias's error rates on simulated sweeps (issue 30). Counts only, no timing.

    python benchmarks/bench_retry_bias.py [--sweeps 200] [--runs 50] [--seed 30] [--json FILE]

Each sweep: one case whose retried runs pass 30 % and clean runs 90 % (a run is retried with
chance 0.3), and nine cases at 90 % either way. Prints the share of sweeps that flag the biased
case (power) and the share that flag any unbiased case (false alarms); then as many sweeps of ten
cases at 90 % either way, and the share that flag any (false alarms with no biased case).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.simulated_retries import measure


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweeps", type=int, default=200)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    rates = measure(args.sweeps, runs=args.runs, seed=args.seed)
    print(f"sweeps {rates.sweeps}, {args.runs} runs a case")
    print(f"biased case flagged: {rates.biased_flagged} ({100 * rates.biased_flagged / rates.sweeps:.1f}%)")
    print(f"false alarms:        {rates.false_alarms} ({100 * rates.false_alarms / rates.sweeps:.1f}%)")
    print(f"false alarms, no biased case: {rates.null_alarms} ({100 * rates.null_alarms / rates.sweeps:.1f}%)")
    if args.json:
        args.json.write_text(json.dumps(asdict(rates), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
