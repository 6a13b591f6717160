"""Bundles (issue 43, SPEC 24): what carrying a sweep's code costs.

1. A generated 1,000-file project (a suite, a ``py:`` agent with a neighbour module and a package
   of 20 modules, 975 documents and data files, ~3 MB): packing it (``farm.bundles.pack``: listing,
   reading, tar, gzip, sha256), storing it in a private redis-server, and a worker's first run of
   it: fetch, verify, unpack into a data directory, and the agent's first import from the copy
   (against the same import from the tree). In this process, medians of ``--repeat``.
2. Per-run overhead against the shared-path mode: distributed sweeps (100 cases × 10 runs of that
   agent answering at once) on one ``farm worker`` process, bundle and ``--no-bundle`` alternating,
   ``--repeat`` each after one warm-up each (the worker has the copy and the modules by then);
   the sweep's own time (the summary's ``duration_ms``: stored → report) per run, and the whole
   ``farm test`` wall (packing included). ``--isolate`` beside them: a child process per agent
   call, the price of isolating bundles by process instead of by module name.

    python benchmarks/bench_bundle.py --repeat 3 [--json bundle.json] [--no-isolate]
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import cluster
import harness

FILES = 1000
AGENT = '''import helpers
from pkg import m00


def respond(messages, context=None):
    import json  # an import at run time: what a bundle's import names cost on every call
    return json.dumps(helpers.WORD) + m00.TAIL
'''


def write_project(root: Path, cases: int = 100) -> Path:
    """The 1,000-file project: ``FILES`` files in all, the suite and the agent among them."""
    (root / "pkg").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "data").mkdir()
    harness.write_suite(root / "suite.jsonl", cases)
    (root / "agent.py").write_text(AGENT, encoding="utf-8")
    (root / "helpers.py").write_text('WORD = "pong"\n', encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    for n in range(20):
        (root / "pkg" / f"m{n:02d}.py").write_text(f"TAIL = ' {n}'\n" + "# padding\n" * 100, encoding="utf-8")
    written = 3 + 21
    for n in range(FILES - written):  # text that compresses about as source does (hex: ~2x), not 100x
        text = "".join(hashlib.sha256(f"{n}-{k}".encode()).hexdigest() for k in range(31 if n % 2 else 62))
        if n % 2:
            (root / "docs" / f"page{n:04d}.md").write_text(f"# page {n}\n{text}\n", encoding="utf-8")
        else:
            (root / "data" / f"row{n:04d}.json").write_text(json.dumps({"n": n, "text": text}), encoding="utf-8")
    return root


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def pack_and_unpack(project: Path, redis_url: str, repeat: int) -> dict[str, Any]:
    """Part 1, in this process: pack, store, and a fresh worker copy's first run, ``repeat`` times."""
    from farm.bundles.pack import pack
    from farm.bundles.unpack import unpacked
    from farm.distributed.bundles import fetch_bundle, store_bundle
    from farm.distributed.store.sweep_store import SweepStore, connect
    from farm.imports import resolve_callable
    from farm.imports.namespaces import register

    store = SweepStore(connect(redis_url), ttl=600)
    figures: dict[str, list[float]] = {k: [] for k in ("pack", "store", "fetch", "unpack", "import_copy",
                                                       "import_tree")}
    bundle = None
    for n in range(repeat):
        (project / "helpers.py").write_text(f'WORD = "pong{n}"\n', encoding="utf-8")  # a new bundle each time
        t = time.perf_counter()
        bundle = pack([project])
        figures["pack"].append(time.perf_counter() - t)
        t = time.perf_counter()
        store_bundle(store, bundle)
        figures["store"].append(time.perf_counter() - t)
        data_dir = Path(tempfile.mkdtemp(prefix="farm-bench-bundle-data-"))
        try:
            ref = bundle.ref
            t = time.perf_counter()
            data = fetch_bundle(store, ref.sha256)
            figures["fetch"].append(time.perf_counter() - t)
            t = time.perf_counter()
            copy = unpacked(data_dir, ref, lambda d=data: d)  # verify + unpack
            figures["unpack"].append(time.perf_counter() - t)
            register(copy, ref.short)
            t = time.perf_counter()
            resolve_callable("agent.py:respond", copy / ref.place(0))([])
            figures["import_copy"].append(time.perf_counter() - t)
            tree = Path(tempfile.mkdtemp(prefix="farm-bench-bundle-tree-"))
            shutil.copytree(project, tree / "p")
            t = time.perf_counter()
            resolve_callable("agent.py:respond", tree / "p")([])
            figures["import_tree"].append(time.perf_counter() - t)
            shutil.rmtree(tree, ignore_errors=True)
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)
    assert bundle is not None
    return {"files": bundle.ref.files, "content_mb": round(bundle.ref.content_bytes / 1e6, 2),
            "archive_mb": round(bundle.ref.size / 1e6, 2),
            **{f"{k}_ms": ms(harness.median(v)) for k, v in figures.items()},
            **{f"{k}_ms_spread": [ms(min(v)), ms(max(v))] for k, v in figures.items()}}


def sweep(project: Path, broker: str, out: Path, extra: list[str]) -> tuple[float, float]:
    """One distributed ``farm test`` from the project's directory: (sweep s per run, wall s)."""
    cmd = [*harness.FARM, "test", "-i", "suite.jsonl", "-n", "py:agent.py:respond", "--runs", "10",
           "-o", str(out), "--no-progress", "--no-history", "--broker", broker, *extra]
    m = harness.measure(cmd, cwd=project)
    if m.returncode != 0:
        raise RuntimeError(f"farm test exited {m.returncode}:\n{m.stderr_tail}")
    summary = json.loads(out.read_text(encoding="utf-8"))["summary"]
    return float(summary["duration_ms"]) / 1000 / int(summary["total_runs"]), m.wall_s


def per_run(project: Path, repeat: int, isolate: bool, tmp: Path) -> dict[str, Any]:
    """Part 2: bundle vs ``--no-bundle`` (and ``--isolate``) on one worker, alternating."""
    modes = {"bundle": [], "no_bundle": ["--no-bundle"], **({"isolate": ["--no-bundle", "--isolate"]} if isolate
                                                           else {})}
    results: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    with harness.Processes(tmp) as procs:
        broker = harness.start_redis(procs)
        cmd = [*harness.FARM, "worker", "--broker", broker, "-n", "bundle@%h", "--processes", "1", "-c", "16"]
        procs.start("worker", cmd, env=harness.bench_env(FARM_DATA_DIR=str(tmp / "worker-data")),
                    cwd=tmp)
        cluster.wait_workers(broker, ["bundle"])
        for mode, extra in modes.items():  # warm-up: imports, connections, the bundle's copy
            sweep(project, broker, tmp / f"warm-{mode}.json", extra)
        for n in range(repeat):
            for mode, extra in modes.items():
                results[mode].append(sweep(project, broker, tmp / f"{mode}-{n}.json", extra))
    figures: dict[str, Any] = {}
    for mode, found in results.items():
        figures[f"{mode}_us_per_run"] = round(harness.median([r[0] for r in found]) * 1e6, 1)
        figures[f"{mode}_us_per_run_spread"] = [round(min(r[0] for r in found) * 1e6, 1),
                                                round(max(r[0] for r in found) * 1e6, 1)]
        figures[f"{mode}_wall_s"] = round(harness.median([r[1] for r in found]), 3)
    pairs = [b[0] / n[0] for b, n in zip(results["bundle"], results["no_bundle"], strict=True)]
    figures["bundle_over_no_bundle"] = round(harness.median(pairs), 4)
    figures["bundle_over_no_bundle_pairs"] = [round(p, 4) for p in pairs]
    if isolate:
        figures["isolate_over_no_bundle"] = round(harness.median(
            [i[0] / n[0] for i, n in zip(results["isolate"], results["no_bundle"], strict=True)]), 3)
    return figures


def main() -> int:
    p = harness.parser(__doc__.splitlines()[0])
    p.add_argument("--no-isolate", action="store_true", help="leave out the --isolate sweeps")
    args = p.parse_args()
    harness.sigterm_as_interrupt()
    with harness.workdir("bundle") as tmp:
        project = write_project(tmp / "project")
        with harness.Processes(tmp) as procs:
            first = pack_and_unpack(project, harness.start_redis(procs), args.repeat)
        (project / "helpers.py").write_text('WORD = "pong"\n', encoding="utf-8")
        second = per_run(project, args.repeat, not args.no_isolate, tmp)
    print(harness.table(["figure", "value"], [[k, v] for k, v in {**first, **second}.items()]))
    harness.emit("bundle", {**first, **second}, args.json_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
