"""Judge trust's statistics on simulated judges (issue 42). Counts only, no timing.

    python benchmarks/bench_judge_trust.py [--criteria 500] [--outputs 50] [--k 5] [--seed 42] [--json FILE]

Flip rate: each criterion has ``--outputs`` outputs (70 % truly passing), each judged k times by a
judge that flips each verdict with probability p (0, 0.01, 0.1, 0.5). Prints the share of criteria
whose ``judge_flip_rate`` interval covers the true 1 − (1 − p)^k − p^k, and the share flagged
``judge_noisy``. Correction: per criterion, human labels (half pass, half fail) judged by a judge of
known TPR/TNR and unlabelled outputs at a known pass rate; prints how often the Rogan–Gladen
interval and the raw interval cover the true pass rate.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.simulated_judges import simulate_correction, simulate_flips

CORRECTIONS = [(0.7, 0.9, 0.8, 100, 200), (0.95, 0.9, 0.8, 40, 200), (0.3, 0.95, 0.7, 60, 100), (0.5, 0.8, 0.8, 40, 50),
               (0.5, 0.8, 0.8, 30, 50)]
"""(true pass rate, TPR, TNR, labels, judged outputs) per setting."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--criteria", type=int, default=500)
    parser.add_argument("--outputs", type=int, default=50)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    figures: dict[str, list[dict[str, object]]] = {"flips": [], "corrections": []}
    print(f"{args.criteria} criteria, {args.outputs} outputs each, k = {args.k}")
    print("| p | true flip rate | interval covers | judge_noisy |")
    print("| --- | --- | --- | --- |")
    for p in (0.0, 0.01, 0.1, 0.5):
        found = simulate_flips(p, k=args.k, outputs=args.outputs, criteria=args.criteria, seed=args.seed)
        truth = 1 - (1 - p) ** args.k - p**args.k
        print(f"| {p} | {truth:.4f} | {found.covered} ({100 * found.coverage:.1f} %) "
              f"| {found.noisy} ({100 * found.noisy_share:.1f} %) |")
        figures["flips"].append(asdict(found))
    print()
    print("| true pass rate | TPR | TNR | labels | judged | corrected covers | raw covers | refused |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for truth, tpr, tnr, labels, judged in CORRECTIONS:
        c = simulate_correction(truth, tpr, tnr, labels=labels, judged=judged, criteria=args.criteria, seed=args.seed)
        shown = c.criteria - c.refused
        print(f"| {truth} | {tpr} | {tnr} | {labels} | {judged} "
              f"| {c.corrected_covered}/{shown} ({100 * c.corrected_covered / max(shown, 1):.1f} %) "
              f"| {c.raw_covered} ({100 * c.raw_covered / c.criteria:.1f} %) | {c.refused} |")
        figures["corrections"].append(asdict(c))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
