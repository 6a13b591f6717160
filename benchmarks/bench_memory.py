"""Memory: peak RSS of the submitter and of the aggregator at 10k and 100k runs (flat?).

    python benchmarks/bench_memory.py [--repeat 3] [--skip-distributed] [--dist-repeat 1] [--json F]
                                      [--formats-only] [--dist-report]

In-process: the ``farm test`` process (load, run, aggregate and the JSONL stream to a file)
against an ``async def`` agent answering at once, ``--parallel 10``, for two shapes: 100 cases
x 100 / x 1,000 runs, and 1,000 cases x 10 / x 100 runs.

Per output format (issue 16: flat in runs for every format): the same 1,000 cases x 10 / x 100
runs, with ``-o report.<ext>`` beside the JSONL stream, for each of JSON, HTML, Markdown, JUnit
(and the JSONL stream alone); ``--formats-only`` runs just these.

Distributed (one private redis-server, one ``farm worker`` with its defaults): the ``farm
test --broker`` process (submitter), the worker process (runs + ``farm.aggregate`` +
``farm.report``) and Redis's own peak (``used_memory_peak``: results are kept for
FARM_RESULT_TTL), for 100 cases x 100 / x 1,000 runs. ``--dist-report``: the same three for 1,000 cases x 10 / x 100
runs with ``-o report.json`` (the worker builds the report with up to 100 run details a case,
the submitter writes it). 100k runs take minutes here, so the
distributed pair runs ``--dist-repeat`` times (default once).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import cluster
import harness

AGENT = f"py:{harness.AGENTS}/zero_agent.py:respond_async"
SHAPES = ((100, 100), (100, 1000), (1000, 10), (1000, 100))
DIST_SHAPES = ((100, 100), (100, 1000))
DIST_REPORT_SHAPES = ((1000, 10), (1000, 100))
"""``--dist-report``: a distributed sweep with ``-o report.json`` (100 run details kept per case)."""
FORMAT_SHAPES = ((1000, 10), (1000, 100))
FORMATS = {"jsonl": None, "json": "report.json", "html": "report.html", "markdown": "report.md",
           "junit": "report.xml"}
"""Output format → the extra ``-o`` file (None: the JSONL stream alone)."""


def in_process(tmp: Path, repeat: int) -> dict[str, list[cluster.SweepRun]]:
    results: dict[str, list[cluster.SweepRun]] = {}
    suites = {cases: harness.write_suite(tmp / f"suite{cases}.jsonl", cases) for cases, _ in SHAPES}
    for _ in range(repeat):
        for cases, runs in SHAPES:
            r = cluster.farm_sweep(suites[cases], AGENT, runs, tmp / "out.jsonl", parallel=10)
            results.setdefault(f"{cases} x {runs}", []).append(r)
    return results


def per_format(tmp: Path, repeat: int) -> dict[str, dict[str, list[cluster.SweepRun]]]:
    results: dict[str, dict[str, list[cluster.SweepRun]]] = {}
    suite = harness.write_suite(tmp / "fsuite1000.jsonl", 1000)
    for _ in range(repeat):
        for fmt, name in FORMATS.items():
            extra = ("-o", str(tmp / name)) if name else ()
            for cases, runs in FORMAT_SHAPES:
                r = cluster.farm_sweep(suite, AGENT, runs, tmp / "fout.jsonl", parallel=10, extra=extra)
                results.setdefault(fmt, {}).setdefault(f"{cases} x {runs}", []).append(r)
    return results


def redis_peak_mb(broker: str) -> float:
    import redis

    client = redis.Redis.from_url(broker)
    try:
        return float(client.info("memory")["used_memory_peak"]) / 2**20
    finally:
        client.close()


def distributed(procs: harness.Processes, tmp: Path, repeat: int, *, report: bool = False
                ) -> dict[str, list[dict[str, float]]]:
    results: dict[str, list[dict[str, float]]] = {}
    shapes = DIST_REPORT_SHAPES if report else DIST_SHAPES
    suite = harness.write_suite(tmp / "dsuite.jsonl", shapes[0][0])
    extra = ("-o", str(tmp / "dreport.json")) if report else ()
    for rep in range(repeat):
        for cases, runs in shapes:
            broker = harness.start_redis(procs)  # a fresh Redis: its peak is this sweep's
            name = f"mem{rep}-{runs}"
            worker = cluster.farm_worker(procs, broker, name)
            try:
                cluster.wait_workers(broker, [name])
                sampler = harness.RssSampler(worker.pid)
                sampler.start()
                r = cluster.farm_sweep(suite, AGENT, runs, tmp / "dout.jsonl", broker=broker, extra=extra)
                sampler.done.set()
                results.setdefault(f"{cases} x {runs}", []).append({
                    "runs": r.runs, "sweep_s": r.sweep_s, "submitter_mb": r.peak_rss_mb,
                    "worker_mb": sampler.peak / 2**20, "redis_peak_mb": redis_peak_mb(broker),
                    "errors": r.statuses.get("error", 0)})
            finally:
                procs.stop(worker)
    return results


def main() -> None:
    p = harness.parser(__doc__.splitlines()[0])
    p.add_argument("--skip-distributed", action="store_true")
    p.add_argument("--dist-repeat", type=int, default=1)
    p.add_argument("--formats-only", action="store_true", help="only the per-format in-process pairs")
    p.add_argument("--dist-report", action="store_true",
                   help="only the distributed pair with -o report.json, 1,000 cases x 10 / x 100 runs")
    args = p.parse_args()
    harness.sigterm_as_interrupt()
    figures: dict[str, Any] = {"load": os.getloadavg()}
    with harness.workdir("memory") as tmp, harness.Processes(tmp) as procs:
        if args.dist_report:
            figures["distributed"] = distributed(procs, tmp, args.dist_repeat, report=True)
            figures["load_after"] = os.getloadavg()
            print_distributed(figures)
            harness.emit("memory", figures, args.json_path)
            return
        if not args.formats_only:
            local = in_process(tmp, args.repeat)
            figures["in-process"] = {k: {"peak_rss_mb": [r.peak_rss_mb for r in v], "wall_s": [r.wall_s for r in v]}
                                     for k, v in local.items()}
        formats = per_format(tmp, args.repeat)
        figures["formats"] = {fmt: {k: {"peak_rss_mb": [r.peak_rss_mb for r in v], "wall_s": [r.wall_s for r in v]}
                                    for k, v in shapes.items()} for fmt, shapes in formats.items()}
        if not args.skip_distributed and not args.formats_only:
            figures["distributed"] = distributed(procs, tmp, args.dist_repeat)
    figures["load_after"] = os.getloadavg()
    print_figures(figures, args.repeat)
    harness.emit("memory", figures, args.json_path)


def print_figures(figures: dict[str, Any], repeat: int) -> None:
    print("\nload average (1, 5, 15 min) before: {:.2f} {:.2f} {:.2f}".format(*figures["load"]),
          "after: {:.2f} {:.2f} {:.2f}".format(*figures["load_after"]))
    local = figures.get("in-process")
    if local:
        print(f"\nIn-process farm test: peak RSS of the process (median of {repeat}; min-max)\n")
        rows = [[shape, harness.spread(f["peak_rss_mb"]), harness.spread(f["wall_s"])] for shape, f in local.items()]
        print(harness.table(["cases x runs", "peak RSS MB", "wall s"], rows))
        for small, big in (("100 x 100", "100 x 1000"), ("1000 x 10", "1000 x 100")):
            ratio = harness.median(local[big]["peak_rss_mb"]) / harness.median(local[small]["peak_rss_mb"])
            print(f"{big} / {small}: {ratio:.2f}x")
    print(f"\nPer output format, 1,000 cases: peak RSS (median of {repeat}; min-max), target x100 / x10 <= 1.3\n")
    rows = []
    for fmt, shapes in figures["formats"].items():
        small, big = (shapes[f"{c} x {r}"] for c, r in FORMAT_SHAPES)
        ratio = harness.median(big["peak_rss_mb"]) / harness.median(small["peak_rss_mb"])
        rows.append([fmt, harness.spread(small["peak_rss_mb"]), harness.spread(big["peak_rss_mb"]), f"{ratio:.2f}x",
                     harness.spread(small["wall_s"]), harness.spread(big["wall_s"])])
    print(harness.table(["format", "x10 MB", "x100 MB", "x100 / x10", "x10 wall s", "x100 wall s"], rows))
    print_distributed(figures)


def print_distributed(figures: dict[str, Any]) -> None:
    dist = figures.get("distributed")
    if not dist:
        return
    print("\nDistributed (one farm worker, defaults): peak RSS (median of the runs)\n")
    keys = ("submitter_mb", "worker_mb", "redis_peak_mb", "sweep_s")
    rows = [[shape, *(harness.spread([r[k] for r in runs]) for k in keys)] for shape, runs in dist.items()]
    print(harness.table(["cases x runs", "submitter MB", "worker MB", "redis peak MB", "sweep s"], rows))
    first, second = list(dist)[:2]
    small, big = dist[first], dist[second]
    for k in keys[:3]:
        ratio = harness.median([r[k] for r in big]) / harness.median([r[k] for r in small])
        print(f"{k}: {second} / {first} = {ratio:.2f}x")


if __name__ == "__main__":
    main()
