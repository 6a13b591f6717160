"""``farm bisect``'s search on simulated probes (issue 30). Counts only, no timing.

    python benchmarks/bench_bisect.py [--trials 20] [--seed 30] [--json FILE]

8 commits; the pass probability drops from 0.95 to 0.55 at commit 5; GOOD (commit 1) and BAD
(commit 8) run 30 times each, every probe in batches of 10 up to 50 runs (the sequential test at
alpha = beta = 0.05). Prints how often commit 5 is named and the runs used against 50 × the
commits probed.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.simulated_bisect import trials


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    found = trials(args.trials, seed=args.seed)
    named = sum(t.named == "c5" for t in found)
    under = sum(t.runs < 50 * t.commits_probed for t in found)
    runs = sorted(t.runs for t in found)
    probed = sorted(t.commits_probed for t in found)
    print(f"trials {len(found)}: commit 5 named in {named}; fewer runs than 50 x commits probed in {under}")
    print(f"runs per bisection: median {runs[len(runs) // 2]}, max {runs[-1]}; "
          f"commits probed (GOOD and BAD included): median {probed[len(probed) // 2]}, max {probed[-1]}")
    print(f"runs per commit probed: max {max(t.runs / t.commits_probed for t in found):.1f} (bound 50)")
    if args.json:
        args.json.write_text(json.dumps([asdict(t) for t in found], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
