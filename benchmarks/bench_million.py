"""A million cases: the whole ``farm test --collect-only`` command on 100k and 1M generated cases.

    python benchmarks/bench_million.py [--repeat 3] [--sizes 100000,1000000] [--flag=--dry-run] [--json F]
    python benchmarks/bench_million.py --before REV [--repeat 3] [--sizes 1000000] [--per-core-only]
    python benchmarks/bench_million.py --submit [--sizes 100000]

Writes a Yao JSONL suite of N one-turn cases (an id, an input, one ``contains`` check: the shape
of ``harness.write_suite``) to a temporary directory, then runs ``farm test -i SUITE -n AGENT
--collect-only`` as a user would: load, validate, resolve the agent, plan and list every id, no
agent called. Prints the wall time and the peak RSS of the process tree (sampled every 20 ms),
and checks that every id was listed. 100k is repeated ``--repeat`` times (median); 1M runs
once (issue 16's targets: ≤ 20 s and ≤ 1.5 GB). Each size is read by a process per core (the
default, ``farm.plan.load_processes``) and, beside it, by one (``FARM_LOAD_PROCESSES=1``).
``--flag=--dry-run`` measures an older checkout that has no ``--collect-only`` (run this
script from it). ``--before REV``: that commit's farm beside this checkout's, alternating run by
run, every size ``--repeat`` times (the load of a shared machine moves between runs, not within one).

``--submit``: the distributed side of issue 16's targets. ``farm test --detach`` of the suite to a
private ``redis-server`` with no worker: the whole command's wall and peak RSS, the plan's store
rate (runs / (submit wall - collect-only wall of the same suite): the load is not the store), and
Redis's memory per planned run (``used_memory`` after, minus before), every run not yet
published but the first window's. ``--no-bundle``: the workers would share this machine (a
million-case suite is past the bundle's 50 MB cap, and the bundle is not the plan's store).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import harness

AGENT = f"py:{harness.AGENTS}/zero_agent.py:respond_async"


def write_suite(path: Path, cases: int) -> Path:
    """``cases`` cases, written line by line (a million do not need to be held)."""
    width = len(str(cases - 1))
    with path.open("w", encoding="utf-8") as out:
        for i in range(cases):
            out.write(json.dumps({"id": f"C{i:0{width}d}", "input": f"say pong number {i}",
                                  "assert": {"type": "contains", "value": "pong"}}) + "\n")
    return path


def collect(suite: Path, cases: int, flag: str, processes: str | None = None, code: Path | None = None
            ) -> harness.Measured:
    """``processes``: ``FARM_LOAD_PROCESSES`` (None: the default, one per core); ``code``: a
    directory holding another commit's ``farm`` (``--before``)."""
    env = harness.bench_env() | ({"FARM_LOAD_PROCESSES": processes} if processes else {})
    if code is not None:
        env["PYTHONPATH"] = f"{code}:{env['PYTHONPATH']}"
    measured = harness.measure([*harness.FARM, "test", "-i", str(suite), "-n", AGENT, flag],
                               cwd=suite.parent, timeout=1800, env=env)
    listed = f"collected {cases} cases" in measured.stderr_tail or flag != "--collect-only"
    if measured.returncode != 0 or not listed:
        raise RuntimeError(f"farm test --collect-only exited {measured.returncode}:\n{measured.stderr_tail}")
    return measured


def submit(suite: Path, cases: int) -> dict[str, float]:
    """``farm test --detach`` to a fresh private Redis, no worker; figures per planned run."""
    import redis

    with harness.Processes(suite.parent) as procs:
        url = harness.start_redis(procs)
        client = redis.Redis.from_url(url)
        before = int(client.info("memory")["used_memory"])
        measured = harness.measure([*harness.FARM, "test", "-i", str(suite), "-n", AGENT, "--detach", "--broker", url,
                                    "--queue", "million", "--no-bundle"], cwd=suite.parent, timeout=1800)
        if measured.returncode != 0:
            raise RuntimeError(f"farm test --detach exited {measured.returncode}:\n{measured.stderr_tail}")
        used = int(client.info("memory")["used_memory"]) - before
        queued = int(client.llen("million"))
        index_s, cases_s = _top_up_reads(url)
    # The load read as the submit reads it (FARM_LOAD_PROCESSES, default two readers for a submit).
    from farm.plan.load_processes import SUBMIT_READERS

    readers = min(len(os.sched_getaffinity(0)), SUBMIT_READERS)
    loaded = collect(suite, cases, "--collect-only", os.environ.get("FARM_LOAD_PROCESSES", str(readers)))
    return {"wall_s": measured.wall_s, "peak_rss_mb": measured.peak_rss_mb, "collect_wall_s": loaded.wall_s,
            "store_runs_per_s": cases / max(measured.wall_s - loaded.wall_s, 1e-9),
            "redis_bytes_per_run": used / cases, "queued_messages": queued,
            "top_up_index_s": index_s, "top_up_all_cases_s": cases_s}


def _top_up_reads(url: str) -> tuple[float, float]:
    """What a worker topping up the window reads: the plan's index (now), every case (before)."""
    import time

    from farm.distributed.store.sweep_store import SweepStore, connect

    store = SweepStore(connect(url))
    sid = store.in_flight_ids()[0]
    start = time.perf_counter()
    store.plan_slots(sid)
    index_s = time.perf_counter() - start
    start = time.perf_counter()
    for _ in store.load_cases(sid, store.case_ids(sid)):
        pass
    return index_s, time.perf_counter() - start


def main_submit(sizes: list[int]) -> None:
    rows, figures = [], {}
    with harness.workdir("million-submit") as tmp:
        for size in sizes:
            f = figures[str(size)] = submit(write_suite(tmp / f"suite{size}.jsonl", size), size)
            rows.append([f"{size:,}", f"{f['wall_s']:.1f}", f"{f['collect_wall_s']:.1f}",
                         f"{f['store_runs_per_s']:,.0f}", f"{f['peak_rss_mb']:.0f}", f"{f['redis_bytes_per_run']:.0f}",
                         f"{f['queued_messages']:,.0f}", f"{f['top_up_index_s']:.2f}",
                         f"{f['top_up_all_cases_s']:.2f}"])
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min)")
    print(harness.table(["cases (1 run each)", "submit wall s", "collect-only wall s", "plan stored, runs/s",
                         "submitter peak RSS MB", "Redis bytes/run", "messages queued",
                         "top-up reads index s", "… every case s (before)"], rows))


def main() -> None:
    p = harness.parser(__doc__.splitlines()[0])
    p.add_argument("--sizes", default="100000,1000000", help="suite sizes, comma-separated")
    p.add_argument("--flag", default="--collect-only", help="the listing flag of farm test")
    p.add_argument("--per-core-only", action="store_true", help="skip the FARM_LOAD_PROCESSES=1 comparison")
    p.add_argument("--submit", action="store_true", help="measure `farm test --detach` to a private Redis instead")
    p.add_argument("--before", default=None, metavar="REV", help="also measure this commit's farm, alternating")
    args = p.parse_args()
    if args.submit:
        main_submit([int(s) for s in args.sizes.split(",")])
        return
    figures: dict[str, list[harness.Measured]] = {}
    rows = []
    with harness.workdir("million") as tmp:
        codes: dict[str, Path | None] = {"": None}
        if args.before:
            from bench_compare_speed import export

            (tmp / "before").mkdir()
            codes[f" ({args.before})"] = export(args.before, tmp / "before")
        for size in (int(s) for s in args.sizes.split(",")):
            suite = write_suite(tmp / f"suite{size}.jsonl", size)
            repeat = args.repeat if size < 1_000_000 or args.before else 1
            for processes, label in ((None, "one per core"), ("1", "one (FARM_LOAD_PROCESSES=1)")):
                if processes and args.per_core_only:
                    continue
                measured: dict[str, list[harness.Measured]] = {name: [] for name in codes}
                for _ in range(repeat):
                    for name, code in codes.items():
                        measured[name].append(collect(suite, size, args.flag, processes, code))
                for name, runs in measured.items():
                    figures[f"{size}/{processes or 'per-core'}{name}"] = runs
                    rows.append([f"{size:,}", label + name, repeat, harness.spread([r.wall_s for r in runs]),
                                 harness.spread([r.cpu_s for r in runs]),
                                 harness.spread([r.peak_rss_mb for r in runs]),
                                 f"{harness.median([r.peak_rss_mb for r in runs]) * 2**20 / size:.0f}"])
            suite.unlink()
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min)")
    print(harness.table(["cases", "processes reading", "runs", "wall s", "CPU s", "peak tree RSS MB", "bytes/case"],
                        rows))
    harness.emit("million", figures, args.json_path)


if __name__ == "__main__":
    harness.sigterm_as_interrupt()
    main()
