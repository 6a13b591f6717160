"""A 1-case, 1-run ``farm test`` against an HTTP agent, whole processes: wall, CPU (issue 45).

    python benchmarks/bench_startup.py [--repeat 5] [--before REV] [--json FILE]

What a user waits for when a sweep is tiny: the interpreter, the imports, the run, the report and
the history. The agent is ``benchmarks/agents/http_agent.py`` (0 ms) on 127.0.0.1; the farm writes
a JSON report and records the history (as by default), and once more with ``--no-history``.
``--before REV`` measures that commit's farm beside this checkout's, alternating. Last, one
``python -X importtime`` run of this checkout: the imports' self time summed by top-level package.
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from pathlib import Path

import harness
from bench_compare_speed import export

SUITE = '{"id": "C1", "input": "say pong", "assert": {"type": "contains", "value": "pong"}}\n'


def farm_test(tmp: Path, url: str, code: Path | None, *extra: str) -> harness.Measured:
    env = harness.bench_env(FARM_DATA_DIR=str(tmp / "data"))
    if code is not None:
        env["PYTHONPATH"] = f"{code}:{env['PYTHONPATH']}"
    measured = harness.measure([*harness.FARM, "test", "-i", "suite.jsonl", "-n", url, "--runs", "1",
                                "--no-progress", "-o", "out.json", *extra], env=env, cwd=tmp)
    if measured.returncode != 0:
        raise SystemExit(f"farm test failed ({measured.returncode}): {measured.stderr_tail}")
    return measured


def import_shares(tmp: Path, url: str) -> list[tuple[str, float]]:
    """Self time of the imports of one ``farm test``, in ms, by top-level package (farm by subpackage)."""
    env = harness.bench_env(FARM_DATA_DIR=str(tmp / "data"))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "farm", "test", "-i", "suite.jsonl", "-n", url,
                           "--runs", "1", "--no-progress", "-o", "out.json"], env=env, cwd=tmp, capture_output=True,
                          text=True, check=True)
    totals: collections.Counter[str] = collections.Counter()
    for line in done.stderr.splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if found:
            parts = found[2].split(".")
            totals[".".join(parts[:2]) if parts[0] == "farm" else parts[0]] += int(found[1]) / 1000
    return totals.most_common(12)


def main() -> None:
    parser = harness.parser(__doc__ or "")
    parser.add_argument("--before", default=None, metavar="REV", help="also measure this commit's farm")
    args = parser.parse_args()
    figures: dict[str, object] = {}
    with harness.workdir("startup") as tmp, harness.Processes(tmp) as procs:
        (tmp / "suite.jsonl").write_text(SUITE, encoding="utf-8")
        url = harness.start_agent_server(procs)
        codes: dict[str, Path | None] = {"this": None}
        if args.before:
            (tmp / "before").mkdir()
            codes["before"] = export(args.before, tmp / "before")
        variants = {"": (), " --no-history": ("--no-history",)}
        measured: dict[str, list[harness.Measured]] = collections.defaultdict(list)
        for code in codes.values():  # warm the page cache and the bytecode once, unmeasured
            farm_test(tmp, url, code)
        for _ in range(args.repeat):
            for name, code in codes.items():
                for suffix, extra in variants.items():
                    measured[name + suffix].append(farm_test(tmp, url, code, *extra))
        rows = []
        for name, runs in measured.items():
            walls, cpus = [m.wall_s for m in runs], [m.cpu_s for m in runs]
            figures[name] = {"wall_s": walls, "cpu_s": cpus, "peak_rss_mb": [m.peak_rss_mb for m in runs]}
            rows.append([name, harness.spread(walls), harness.spread(cpus)])
        print(harness.table(["farm test, 1 case × 1 run, HTTP agent", "wall s", "CPU s"], rows))
        shares = import_shares(tmp, url)
        figures["import_self_ms"] = dict(shares)
        print("imports (self ms, one -X importtime run): " + ", ".join(f"{k} {v:.0f}" for k, v in shares))
    harness.emit("startup", figures, args.json_path)


if __name__ == "__main__":
    main()
