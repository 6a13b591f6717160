"""Load bias's error rates on simulated sweeps (issue 44, SPEC 25). Counts only, no timing.

    python benchmarks/bench_load_bias.py [--sweeps 1000] [--runs 40] [--drop 0.5] [--seed 44] [--json FILE]

For each shape of load (``tests/support/simulated_load.py``: ``steady`` in-process at --parallel 16,
``fleet`` 8 to 16 in flight at random, ``ramp`` 2,4,8,16), ``--sweeps`` sweeps of ten load-blind
cases (each passing 0.5 to 0.95 whatever the load): the share that flag any case (false alarms);
and as many with the first case load-sensitive (0.9 with at most K in flight, 0.9 − drop above;
K 8, 12, 4 by shape): the share that flag it (power) and the share that flag a blind case beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.simulated_load import SHAPES, measure


def _share(count: int, sweeps: int) -> str:
    return f"{count} ({100 * count / sweeps:.1f} %)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweeps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=40, help="runs a case")
    parser.add_argument("--drop", type=float, default=0.5, help="the sensitive case's drop above K in flight")
    parser.add_argument("--seed", type=int, default=44)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    print(f"{args.sweeps} sweeps a shape, 10 cases of {args.runs} runs, sensitive case drops {args.drop:g} above K")
    print("| shape | false alarms (10 blind cases) | sensitive case flagged | blind case flagged beside it |")
    print("| --- | --- | --- | --- |")
    found = []
    for shape in SHAPES:
        rates = measure(shape, args.sweeps, runs=args.runs, drop=args.drop, seed=args.seed)
        found.append(asdict(rates))
        print(f"| {shape} | {_share(rates.null_alarms, rates.sweeps)} | {_share(rates.sensitive_flagged, rates.sweeps)}"
              f" | {_share(rates.blind_alarms, rates.sweeps)} |")
    if args.json:
        args.json.write_text(json.dumps(found, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
