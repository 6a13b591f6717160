"""Per-run overhead of the in-process path, with zero-latency agents, and where the time goes.

    python benchmarks/bench_inprocess.py [--repeat 3] [--json out.json] [--profile-dir DIR]

Each sweep is ``farm test`` as a library call in this process (load, plan, execute, JSONL
stream to a file), so interpreter start-up is not counted. Agents: a plain Python function
(run on the python adapter's pooled daemon threads), an ``async def`` (no thread), and an HTTP
agent answering at once from another process. Then one sweep of each under cProfile: its
hottest functions and the share of time by library.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
from pathlib import Path
from typing import Any

import harness

AGENTS = {
    "python sync (pooled threads)": f"py:{harness.AGENTS}/zero_agent.py:respond",
    "python async": f"py:{harness.AGENTS}/zero_agent.py:respond_async",
    "http, 0 ms": "HTTP",
}
AREAS = (
    ("farm.run", "/farm/run/"), ("farm.checks", "/farm/checks/"), ("farm.stats", "/farm/stats/"),
    ("farm.reports", "/farm/reports/"), ("farm.agents", "/farm/agents/"), ("farm (other)", "/farm/"),
    ("pydantic", "/pydantic"), ("aiohttp", "/aiohttp/"), ("yarl", "/yarl/"), ("multidict", "/multidict/"),
    ("asyncio", "/asyncio/"), ("json", "/json/"), ("threading", "threading.py"), ("uuid", "uuid.py"),
)


def timed(suite: Path, agent: str, runs: int, parallel: int, out: Path, repeat: int) -> dict[str, Any]:
    harness.sweep_in_process(suite, agent, runs=1, parallel=parallel, out=out)  # warm imports and caches
    rates, cpus = [], []
    for _ in range(repeat):
        t = harness.sweep_in_process(suite, agent, runs=runs, parallel=parallel, out=out)
        if t.by_status.get("passed") != t.runs:
            raise RuntimeError(f"{agent}: not every run passed: {t.by_status}")
        rates.append(t.runs / t.wall_s)
        cpus.append(t.cpu_s / t.runs * 1e6)
    return {"runs": runs * 100, "runs_per_s": rates, "cpu_us_per_run": cpus}


def area_of(filename: str) -> str:
    for name, marker in AREAS:
        if marker in filename:
            return name
    return "builtins (C)" if filename == "~" else "other"


def profile(suite: Path, agent: str, runs: int, parallel: int, out: Path, dump: Path | None) -> dict[str, Any]:
    prof = cProfile.Profile()
    prof.enable()
    harness.sweep_in_process(suite, agent, runs=runs, parallel=parallel, out=out)
    prof.disable()
    if dump is not None:
        prof.dump_stats(str(dump))
    stats = pstats.Stats(prof)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in raw.values()) or 1.0
    areas: dict[str, float] = {}
    for (filename, _line, _fn), (_cc, _nc, tottime, _ct, _callers) in raw.items():
        areas[area_of(filename)] = areas.get(area_of(filename), 0.0) + tottime
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(18)
    cumulative = io.StringIO()
    pstats.Stats(prof, stream=cumulative).sort_stats("cumulative").print_stats(r"farm/", 25)
    return {"areas": {k: v / total for k, v in sorted(areas.items(), key=lambda kv: -kv[1])},
            "top_tottime": _trim(text.getvalue()), "top_farm_cumulative": _trim(cumulative.getvalue())}


def _slug(label: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in label).split()[:2])


def _trim(report: str) -> str:
    lines = report.splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return "\n".join(line.replace(str(harness.ROOT) + "/", "") for line in lines[start:] if line.strip())


def main() -> None:
    p = harness.parser(__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=50, help="runs per case (100 cases)")
    p.add_argument("--parallel", type=int, default=50)
    p.add_argument("--profile-dir", type=Path, default=None, help="also write the .prof files here")
    args = p.parse_args()
    harness.sigterm_as_interrupt()
    if args.profile_dir:
        args.profile_dir.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {}
    with harness.workdir("inprocess") as tmp, harness.Processes(tmp) as procs:
        suite = harness.write_suite(tmp / "suite.jsonl", 100)
        http = harness.start_agent_server(procs, 0)
        out = tmp / "out.jsonl"
        for label, agent in AGENTS.items():
            ref = http if agent == "HTTP" else agent
            figures[label] = timed(suite, ref, args.runs, args.parallel, out, args.repeat)
        for label, agent in AGENTS.items():
            ref = http if agent == "HTTP" else agent
            dump = args.profile_dir / f"{_slug(label)}.prof" if args.profile_dir else None
            figures[label]["profile"] = profile(suite, ref, args.runs, args.parallel, out, dump)
    print_figures(figures, args.runs, args.parallel)
    harness.emit("inprocess", figures, args.json_path)


def print_figures(figures: dict[str, Any], runs: int, parallel: int) -> None:
    print(f"\nIn-process, zero-latency agents: 100 cases x {runs} runs, --parallel {parallel} "
          "(median of repeats; min-max)\n")
    rows = [[label, f["runs"], harness.spread(f["runs_per_s"]), harness.spread(f["cpu_us_per_run"])]
            for label, f in figures.items()]
    print(harness.table(["agent", "runs", "runs/s", "CPU us/run"], rows))
    for label, f in figures.items():
        areas = ", ".join(f"{k} {v:.0%}" for k, v in f["profile"]["areas"].items() if v >= 0.02)
        print(f"\n## profile: {label}\nself time by area: {areas}\n")
        print(f["profile"]["top_tottime"])
        print("\nfarm functions by cumulative time:\n")
        print(f["profile"]["top_farm_cumulative"])
    sys.stdout.flush()


if __name__ == "__main__":
    main()
