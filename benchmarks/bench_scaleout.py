"""Scale-out: the same I/O-bound sweep on one worker, then on more.

    python benchmarks/bench_scaleout.py [--repeat 3] [--netns | --loopback] [--json F]
    python benchmarks/bench_scaleout.py --capacity [--repeat 3]

2,000 runs (100 cases x 20) of an HTTP agent answering after 100 ms; each ``farm worker`` runs
50 at once (``-c 50``), so one worker's ideal is 4 s and two workers' 2 s. ``--capacity`` is
issue 32's measure: 400 runs (40 cases x 10) of an agent answering after 1 s, each worker one
process (``--processes 1``) capped at 10 in flight, one worker against four (ideal 40 s and
10 s: the agent's latency, not the machine's cores, is what a worker's capacity is). The
figures can be set one by one (``--cases --runs --latency-ms --per-worker --processes
--workers``). With ``--netns``
(the default when root can make network namespaces) every worker is its own "host": a
namespace linked by a veth pair to a hub namespace holding Redis, the agent and the submitter
(benchmarks/netns.py); the namespaces are deleted at the end. ``--loopback``: plain processes
on 127.0.0.1.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import cluster
import harness
import netns

DEFAULTS = {"cases": 100, "runs": 20, "latency_ms": 100.0, "per_worker": 50, "processes": 0, "workers": "1,2"}
CAPACITY = {"cases": 40, "runs": 10, "latency_ms": 1000.0, "per_worker": 10, "processes": 1, "workers": "1,4"}
"""Issue 32's scale-out as capacity: a 1 s agent, one process a worker capped at 10 in flight."""


def ideal_s(args: Any, workers: int) -> float:
    return float(args.cases * args.runs * args.latency_ms / 1000 / (args.per_worker * workers))


def worker_args(args: Any) -> list[str]:
    extra = ["-c", str(args.per_worker)]
    return extra + (["--processes", str(args.processes)] if args.processes else [])


def sweep_on(procs: harness.Processes, broker: str, url: str, tmp: Path, namespaces: list[str | None],
             tag: str, args: Any) -> cluster.SweepRun:
    names = [f"{tag}w{i}" for i in range(len(namespaces))]
    workers = [cluster.farm_worker(procs, broker, name, *worker_args(args), netns=ns)
               for name, ns in zip(names, namespaces, strict=True)]
    try:
        cluster.wait_workers(broker, names)
        suite = tmp / "suite.jsonl"
        cluster.warm_up(suite, url, tmp / "out.jsonl", broker)
        return cluster.farm_sweep(suite, url, args.runs, tmp / "out.jsonl", broker=broker)
    finally:
        for w in workers:
            procs.stop(w)
        harness.flush_redis(broker)


def counts(args: Any) -> list[int]:
    return [int(n) for n in str(args.workers).split(",")]


def measure_all(args: Any, host: str, worker_ns: list[str | None]) -> dict[int, list[cluster.SweepRun]]:
    results: dict[int, list[cluster.SweepRun]] = {n: [] for n in counts(args)}
    with harness.workdir("scaleout") as tmp, harness.Processes(tmp) as procs:
        broker = harness.start_redis(procs, bind=host)
        url = harness.start_agent_server(procs, args.latency_ms, host=host)
        harness.write_suite(tmp / "suite.jsonl", args.cases)
        for rep in range(args.repeat):  # alternated, so a slow minute of the machine hits both
            for n in results:
                results[n].append(sweep_on(procs, broker, url, tmp, worker_ns[:n], f"w{n}r{rep}", args))
    return results


def report(results: dict[int, list[cluster.SweepRun]], where: str, args: Any) -> None:
    figures: dict[str, Any] = {"where": where, "settings": {k: getattr(args, k) for k in DEFAULTS}}
    rows = []
    for n, runs in results.items():
        sweep_s = [r.sweep_s for r in runs]
        figures[f"{n} workers"] = {"sweep_s": sweep_s, "x_ideal": harness.median(sweep_s) / ideal_s(args, n),
                                   "statuses": runs[-1].statuses}
        rows.append([str(n), harness.spread(sweep_s), f"{ideal_s(args, n):g}",
                     f"{harness.median(sweep_s) / ideal_s(args, n):.2f}", runs[-1].statuses.get("passed", 0)])
    first, *more = results
    base = harness.median([r.sweep_s for r in results[first]])
    processes = f", --processes {args.processes}" if args.processes else ""
    print(f"\nScale-out ({where}): {args.cases * args.runs} runs x {args.latency_ms:g} ms, -c {args.per_worker} "
          f"per worker{processes} (median of {args.repeat}; min-max)\n")
    print(harness.table(["workers", "sweep s", "ideal s", "x ideal", "passed"], rows))
    for n in more:
        ratios = [a.sweep_s / b.sweep_s for a, b in zip(results[first], results[n], strict=True)]
        speedup = base / harness.median([r.sweep_s for r in results[n]])
        figures[f"speedup_{n}"] = {"of_medians": speedup, "per_repeat": ratios}
        print(f"\nspeed-up with {n} workers over {first}: {speedup:.2f}x of the medians, per repeat "
              f"{harness.spread(ratios)} (ideal {n / first:g}x)")
    harness.emit("scaleout", figures, args.json_path)


def outer_netns(args: Any) -> None:
    """Make the hosts, run this script inside the hub, delete the hosts."""
    with netns.hosts(max(counts(args))) as topo:
        cmd = ["ip", "netns", "exec", topo.hub, harness.PYTHON, __file__, "--inside", topo.hub_ip,
               "--worker-ns", ",".join(topo.workers), "--repeat", str(args.repeat)]
        cmd += [f"--{key.replace('_', '-')}={getattr(args, key)}" for key in DEFAULTS]
        if args.json_path:
            cmd += ["--json", str(Path(args.json_path).resolve())]
        proc = subprocess.Popen(cmd, env=harness.bench_env(), start_new_session=True)
        try:
            code = proc.wait()
        finally:  # the inner script stops its own workers and Redis: give it time to
            harness.kill_tree(proc, grace=60.0)
    if code:
        raise SystemExit(code)


def main() -> None:
    p = harness.parser(__doc__.splitlines()[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--netns", action="store_true", help="workers in their own network namespaces")
    mode.add_argument("--loopback", action="store_true", help="workers as processes on 127.0.0.1")
    p.add_argument("--inside", default=None, help=argparse_hidden())
    p.add_argument("--worker-ns", default=None, help=argparse_hidden())
    p.add_argument("--capacity", action="store_true", help="issue 32's figures: " + str(CAPACITY))
    p.add_argument("--cases", type=int, default=None)
    p.add_argument("--runs", type=int, default=None, help="runs per case")
    p.add_argument("--latency-ms", type=float, default=None, help="the agent's delay")
    p.add_argument("--per-worker", type=int, default=None, help="-c of each farm worker")
    p.add_argument("--processes", type=int, default=None, help="--processes of each farm worker (0: its default)")
    p.add_argument("--workers", default=None, help="worker counts to compare, comma-separated, first is the base")
    args = p.parse_args()
    preset = CAPACITY if args.capacity else DEFAULTS
    for key, value in preset.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    harness.sigterm_as_interrupt()
    if args.inside:  # running in the hub namespace
        spaces: list[str | None] = list(args.worker_ns.split(","))
        report(measure_all(args, args.inside, spaces), f"{len(spaces)} network namespaces over veth", args)
        return
    use_netns = args.netns or (not args.loopback and netns.available())
    if use_netns:
        outer_netns(args)
        return
    report(measure_all(args, "127.0.0.1", [None] * max(counts(args))), "loopback", args)


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    sys.exit(main())
