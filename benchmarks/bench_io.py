"""I/O efficiency: 1,000 runs of an HTTP agent that answers after 100 ms, 100 in flight.

    python benchmarks/bench_io.py [--repeat 3] [--skip-distributed] [--json F]

In-process: ``farm test --parallel 100`` against benchmarks/agents/http_agent.py (its own
process, 100 ms delay); the sweep's own duration (the summary's duration_ms) over the ideal
runs x latency / concurrency = 1 s, and the whole process's wall. Beside it, in the same
repetitions, the same 1,000 POSTs from a raw aiohttp client (one session) and a raw httpx
client (10 clients of 10 connections; skipped when httpx is not installed: ``.[bench]``),
``benchmarks/http_clients.py``: the farm's sweep over raw aiohttp's time is issue 16's target.
The raw clients time their calls on connections a warm-up opened; the farm's sweep opens its own,
so raw aiohttp is also timed opening its 100 connections in the timed calls (same work as the farm).
The floor beside them: the same POSTs written by hand on asyncio streams (no HTTP library), which
shows what the agent server, the loopback and the event loop allow: the rest is the client's.
Then the CPU per call of the three against the agent answering at once (3,000 calls at 50):
what the HTTP stack and the farm's per-run path cost.

Distributed (one private redis-server): ``farm worker -c 100`` (threads) and ``farm test
--broker`` against the same agent, vs raw Celery ``-P threads -c 100`` running 1,000 tasks
that make the same POST to the same agent server on a keep-alive connection per thread (issue
32's reference; ``benchmarks/raw_celery.py``'s ``post``), and, as before, 1,000 tasks that sleep
100 ms. The farm's sweep time over raw's, and the whole processes' walls (the farm's ``farm
test`` against raw's submitter); also ``farm worker`` with its default concurrency (64).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from typing import Any

import cluster
import harness

CASES, RUNS, LATENCY_MS, CONCURRENCY = 100, 10, 100.0, 100
IDEAL_S = CASES * RUNS * LATENCY_MS / 1000 / CONCURRENCY
CPU_CALLS, CPU_CONCURRENCY = 3000, 50
FARM_IN_PROCESS = "in-process farm test --parallel 100"
RAW_AIOHTTP = "raw aiohttp client, one session"
RAW_POST = "raw celery, threads 100, the same POST (keep-alive)"
RAW_AIOHTTP_COLD = "raw aiohttp, connections opened in the timed calls"
RAW_HTTPX = "raw httpx, 10 clients x 10 connections"
RAW_STREAMS = "floor: HTTP/1.1 by hand on asyncio streams"
RAW_CLIENTS = {RAW_AIOHTTP: "aiohttp", RAW_AIOHTTP_COLD: "aiohttp-cold", RAW_STREAMS: "streams", RAW_HTTPX: "httpx"}


def clients() -> dict[str, str]:
    """The raw clients to measure: httpx only where it is installed."""
    return {k: v for k, v in RAW_CLIENTS.items() if v != "httpx" or importlib.util.find_spec("httpx")}


def raw_client(client: str, url: str, calls: int, concurrency: int) -> cluster.SweepRun:
    """benchmarks/http_clients.py in a child process: its calls' wall and CPU."""
    m = harness.measure([harness.PYTHON, str(harness.BENCH / "http_clients.py"), "--client", client, "--url", url,
                         "--calls", str(calls), "--concurrency", str(concurrency)])
    if m.returncode != 0:
        raise RuntimeError(f"http_clients.py --client {client} exited {m.returncode}:\n{m.stderr_tail}")
    figures = json.loads(m.extra["stdout"].strip().splitlines()[-1])
    return cluster.SweepRun(calls, m.wall_s, float(figures["elapsed_s"]), float(figures["cpu_s"]), m.peak_rss_mb,
                            {"passed": calls})


def in_process(url: str, tmp: Any, repeat: int) -> dict[str, list[cluster.SweepRun]]:
    """The farm's sweep and the raw clients, interleaved repetition by repetition."""
    suite = harness.write_suite(tmp / "suite.jsonl", CASES)
    results: dict[str, list[cluster.SweepRun]] = {FARM_IN_PROCESS: [], **{name: [] for name in clients()}}
    for _ in range(repeat):
        r = cluster.farm_sweep(suite, url, RUNS, tmp / "out.jsonl", parallel=CONCURRENCY)
        _check(r)
        results[FARM_IN_PROCESS].append(r)
        for name, client in clients().items():
            results[name].append(raw_client(client, url, CASES * RUNS, CONCURRENCY))
    return results


def cpu_per_call(url: str, repeat: int) -> dict[str, list[float]]:
    """Microseconds of CPU per call against an agent answering at once (each in its own process)."""
    warm = {k: v for k, v in clients().items() if k not in (RAW_AIOHTTP_COLD, RAW_STREAMS)}
    cpu: dict[str, list[float]] = {"farm (library sweep, no output)": [], **{name: [] for name in warm}}
    for _ in range(repeat):
        for name, client in {"farm (library sweep, no output)": "farm", **warm}.items():
            r = raw_client(client, url, CPU_CALLS, CPU_CONCURRENCY)
            cpu[name].append(r.cpu_s / CPU_CALLS * 1e6)
    return cpu


def _check(r: cluster.SweepRun) -> None:
    if r.statuses.get("passed") != CASES * RUNS:
        raise RuntimeError(f"not every run passed: {r.statuses}")


def on_worker(procs: harness.Processes, broker: str, name: str, start: Callable[[str], Any],
              sweep: Callable[[], cluster.SweepRun], warm: Callable[[], Any]) -> cluster.SweepRun:
    worker = start(name)
    try:
        cluster.wait_workers(broker, [name])
        warm()
        return sweep()
    finally:
        procs.stop(worker)
        harness.flush_redis(broker)


def distributed(procs: harness.Processes, url: str, tmp: Any, repeat: int) -> dict[str, list[cluster.SweepRun]]:
    broker = harness.start_redis(procs)
    suite, out = tmp / "suite.jsonl", tmp / "out.jsonl"
    results: dict[str, list[cluster.SweepRun]] = {RAW_POST: [], "raw celery, threads 100, sleep 100 ms": [],
                                                  "farm worker -c 100": [], "farm worker (default -c 64)": []}
    farm = lambda: cluster.farm_sweep(suite, url, RUNS, out, broker=broker)  # noqa: E731
    warm = lambda: cluster.warm_up(suite, url, out, broker)  # noqa: E731
    for rep in range(repeat):
        results[RAW_POST].append(on_worker(
            procs, broker, f"rawp{rep}",
            lambda n: cluster.raw_worker(procs, broker, n, pool="threads", concurrency=100),
            lambda: cluster.raw_sweep(broker, "post", CASES * RUNS, url=url),
            lambda: cluster.raw_sweep(broker, "post", CASES, url=url)))
        results["raw celery, threads 100, sleep 100 ms"].append(on_worker(
            procs, broker, f"raw{rep}", lambda n: cluster.raw_worker(procs, broker, n, pool="threads", concurrency=100),
            lambda: cluster.raw_sweep(broker, "sleep", CASES * RUNS, LATENCY_MS),
            lambda: cluster.raw_sweep(broker, "sleep", CASES, LATENCY_MS)))
        results["farm worker -c 100"].append(on_worker(
            procs, broker, f"farm{rep}", lambda n: cluster.farm_worker(procs, broker, n, "-c", str(CONCURRENCY)),
            farm, warm))
        results["farm worker (default -c 64)"].append(on_worker(
            procs, broker, f"farmd{rep}", lambda n: cluster.farm_worker(procs, broker, n), farm, warm))
    for name, runs in results.items():
        if name.startswith("farm"):
            for r in runs:
                _check(r)
    return results


def main() -> None:
    p = harness.parser(__doc__.splitlines()[0])
    p.add_argument("--skip-distributed", action="store_true")
    args = p.parse_args()
    harness.sigterm_as_interrupt()
    with harness.workdir("io") as tmp, harness.Processes(tmp) as procs:
        url = harness.start_agent_server(procs, LATENCY_MS)
        results = in_process(url, tmp, args.repeat)
        cpu = cpu_per_call(harness.start_agent_server(procs, 0), args.repeat)
        if not args.skip_distributed:
            results.update(distributed(procs, url, tmp, args.repeat))
    figures = print_figures(results, cpu, args.repeat)
    harness.emit("io", figures, args.json_path)


def _reference(results: dict[str, list[cluster.SweepRun]], name: str) -> float | None:
    runs = results.get(name)
    return harness.median([r.sweep_s for r in runs]) if runs else None


def print_figures(results: dict[str, list[cluster.SweepRun]], cpu: dict[str, list[float]],
                  repeat: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    raw_celery = _reference(results, RAW_POST)
    raw_wall = [r.wall_s for r in results.get(RAW_POST, [])]
    raw_aiohttp = _reference(results, RAW_AIOHTTP)
    raw_cold = _reference(results, RAW_AIOHTTP_COLD)
    rows = []
    for name, runs in results.items():
        sweep_s = [r.sweep_s for r in runs]
        reference = raw_celery if name.startswith("farm worker") else raw_aiohttp if name == FARM_IN_PROCESS else None
        ratio_ideal = harness.median(sweep_s) / IDEAL_S
        ratio_raw = harness.median(sweep_s) / reference if reference else None
        figures[name] = {"sweep_s": sweep_s, "wall_s": [r.wall_s for r in runs], "cpu_s": [r.cpu_s for r in runs],
                         "x_ideal": ratio_ideal, "x_raw": ratio_raw}
        if name.startswith("farm worker") and raw_wall:
            figures[name]["x_raw_wall"] = harness.median([r.wall_s for r in runs]) / harness.median(raw_wall)
        if name == FARM_IN_PROCESS and raw_cold:
            figures[name]["x_raw_cold"] = harness.median(sweep_s) / raw_cold
        rows.append([name, harness.spread(sweep_s), f"{ratio_ideal:.2f}", f"{ratio_raw:.2f}" if ratio_raw else "",
                     harness.spread([r.wall_s for r in runs]), harness.spread([r.cpu_s for r in runs])])
    print(f"\n{CASES * RUNS} runs x {LATENCY_MS:g} ms at concurrency {CONCURRENCY} (ideal {IDEAL_S:g} s; "
          f"median of {repeat}; min-max). x raw: in-process over raw aiohttp, workers over raw Celery's POST\n")
    print(harness.table(["setup", "sweep s", "x ideal", "x raw", "process wall s", "process CPU s"], rows))
    print(f"\nCPU per call, agent answering at once: {CPU_CALLS} calls at {CPU_CONCURRENCY} (us; median, min-max)\n")
    print(harness.table(["client", "CPU us/call"], [[name, harness.spread(us)] for name, us in cpu.items()]))
    if FARM_IN_PROCESS in figures and "x_raw_cold" in figures[FARM_IN_PROCESS]:
        print(f"\nin-process farm over raw aiohttp opening its connections in the timed calls: "
              f"{figures[FARM_IN_PROCESS]['x_raw_cold']:.2f}")
    for name in ("farm worker -c 100", "farm worker (default -c 64)"):
        if name in figures and "x_raw_wall" in figures[name]:
            print(f"\n{name}: whole farm test over raw Celery's whole submitter ({RAW_POST}): "
                  f"{figures[name]['x_raw_wall']:.2f}")
    figures["cpu_us_per_call"] = cpu
    return figures


if __name__ == "__main__":
    main()
