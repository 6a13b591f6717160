"""The semantic step's cost per 1,000 runs whose answers are all distinct (SPEC 16).

    python3 benchmarks/semantic_cost.py [--answers 1000] [--repeat 3] [--cases 5]

Measures process CPU time (not wall: it holds on a busy machine) of what an aggregating process
adds: loading the model once, then embedding and clustering each case's distinct answers. A case
keeps at most ``SEMANTIC_SAMPLE_CAP`` (200) distinct answers, so 1,000 runs over ``--cases`` cases
embed min(1000, 200 × cases) answers. Prints the median of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm.semantic import cluster_texts, missing_requirement
from farm.semantic.embedder import embed
from farm.stats.semantic import SEMANTIC_SAMPLE_CAP

SUBJECTS = ["Paris", "The museum", "Our order", "The river", "This library", "The old bridge", "A small cafe",
            "The new policy", "The city council", "Every visitor"]
VERBS = ["is known for", "was praised for", "became famous for", "is often visited for", "stands out for"]
OBJECTS = ["its quiet streets", "a long history of art", "fast delivery", "the view at sunset", "friendly staff",
           "rules about parking", "fresh bread every morning", "a free concert each Friday", "its glass roof",
           "clear instructions", "late opening hours", "a garden behind the hall", "cheap tickets"]


def answers(count: int) -> list[str]:
    """``count`` distinct answers of one or two sentences, like a chatty agent's."""
    made = [f"{s} {v} {o}." for s in SUBJECTS for v in VERBS for o in OBJECTS]
    return [f"{made[i % len(made)]} Answer {i}." for i in range(count)]


def cpu(step: object) -> float:
    start = time.process_time()
    step()  # type: ignore[operator]
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", type=int, default=5)
    args = parser.parse_args()
    if missing_requirement() is not None:
        raise SystemExit(f"{missing_requirement()} is not installed: pip install -e '.[semantic]'")
    texts = answers(args.answers)
    load = cpu(lambda: embed(["warm up"]))
    per_case = min(SEMANTIC_SAMPLE_CAP, -(-args.answers // args.cases))
    chunks = [texts[i:i + per_case] for i in range(0, args.answers, -(-args.answers // args.cases))]

    def step() -> None:
        for chunk in chunks:
            cluster_texts(chunk, [1] * len(chunk))

    times = [cpu(step) for _ in range(args.repeat)]
    embedded = sum(len(c) for c in chunks)
    print(f"model load (once per process): {load:.2f} s CPU")
    print(f"{args.answers} distinct answers in {len(chunks)} cases ({embedded} embedded): "
          f"median {statistics.median(times):.2f} s CPU over {args.repeat} runs "
          f"({', '.join(f'{t:.2f}' for t in times)})")


if __name__ == "__main__":
    main()
