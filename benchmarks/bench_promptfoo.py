"""The farm against promptfoo on the same workload: whole-process wall time and peak RSS.

    (cd benchmarks/promptfoo && npm install --no-save)  # once: promptfoo pinned (npm ci: see README)
    python benchmarks/bench_promptfoo.py [--repeat 3] [--json out.json]

Workload (both tools): 100 test cases x 10 repeats = 1,000 evaluations of a local HTTP agent
that answers at once (benchmarks/agents/http_agent.py, its own process), one ``contains``
check each, 50 in flight, no cache. promptfoo: HTTP provider, ``--no-cache -j 50 --repeat 10``,
telemetry, update checks and sharing off, its database in a temporary directory. The farm:
``farm test -n http://… --runs 10 --parallel 50 -o out.jsonl``, with and without ``--no-history``
(paired with promptfoo with and without ``--no-write``). Each is measured from process
start to exit (wall), CPU of the process tree, peak RSS of the process tree (sampled).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import harness

PROMPTFOO_DIR = harness.BENCH / "promptfoo"
PROMPTFOO_BIN = PROMPTFOO_DIR / "node_modules" / ".bin" / "promptfoo"
CASES, REPEATS, CONCURRENCY = 100, 10, 50
PAIRS = {"promptfoo eval": "farm test", "promptfoo eval --no-write": "farm test --no-history"}
"""Each promptfoo run against its farm counterpart: promptfoo stores every eval in its database
by default as the farm records each sweep in its history; ``--no-write`` and ``--no-history``
store nothing (the farm still writes ``-o`` and its run journal)."""


def promptfoo_config(tmp: Path, url: str) -> Path:
    """A promptfoo config as JSON (YAML is a superset): one prompt, 100 tests, one contains each."""
    config = {
        "description": "agent-farm benchmark",
        "prompts": ["say pong number {{i}}"],
        "providers": [{
            "id": url,
            "config": {
                "method": "POST",
                "headers": {"Content-Type": "application/json"},
                "body": {"messages": [{"role": "user", "content": "{{prompt}}"}]},
                "transformResponse": "json.text",
            },
        }],
        "tests": [{"vars": {"i": i}, "assert": [{"type": "contains", "value": "pong"}]} for i in range(CASES)],
    }
    path = tmp / "promptfooconfig.yaml"
    path.write_text(json.dumps(config, indent=1), encoding="utf-8")
    return path


def promptfoo_env(tmp: Path) -> dict[str, str]:
    home = tmp / "promptfoo-home"
    home.mkdir(exist_ok=True)
    return harness.bench_env(
        PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1", PROMPTFOO_DISABLE_SHARING="1",
        PROMPTFOO_CACHE_ENABLED="false", PROMPTFOO_CONFIG_DIR=str(home), PROMPTFOO_DISABLE_REMOTE_GENERATION="1",
        IS_TESTING="", NO_COLOR="1",
    )


def promptfoo_cmd(config: Path, *, write: bool) -> list[str]:
    cmd = [str(PROMPTFOO_BIN), "eval", "-c", str(config), "--no-cache", "-j", str(CONCURRENCY),
           "--repeat", str(REPEATS), "--no-table", "--no-progress-bar", "--no-share"]
    return cmd if write else [*cmd, "--no-write"]


def farm_cmd(suite: Path, url: str, out: Path) -> list[str]:
    return [*harness.FARM, "test", "-i", str(suite), "-n", url, "--runs", str(REPEATS),
            "--parallel", str(CONCURRENCY), "-o", str(out), "--no-progress"]


def run_all(tmp: Path, url: str, repeat: int) -> dict[str, list[harness.Measured]]:
    suite = harness.write_suite(tmp / "suite.jsonl", CASES)
    config = promptfoo_config(tmp, url)
    env = promptfoo_env(tmp)
    tools: dict[str, tuple[list[str], dict[str, str]]] = {
        "farm test": (farm_cmd(suite, url, tmp / "out.jsonl"), harness.bench_env()),
        "farm test --no-history": ([*farm_cmd(suite, url, tmp / "out.jsonl"), "--no-history"], harness.bench_env()),
        "promptfoo eval": (promptfoo_cmd(config, write=True), env),
        "promptfoo eval --no-write": (promptfoo_cmd(config, write=False), env),
    }
    results: dict[str, list[harness.Measured]] = {name: [] for name in tools}
    for _ in range(repeat):  # interleaved: noise on the machine hits every tool alike
        for name, (cmd, cmd_env) in tools.items():
            m = harness.measure(cmd, env=cmd_env, cwd=tmp)
            if name.startswith("farm test"):
                m.extra["statuses"] = harness.jsonl_counts(tmp / "out.jsonl")
            if m.returncode not in (0, 100):  # promptfoo exits 100 when a test fails
                raise RuntimeError(f"{name} exited {m.returncode}:\n{m.stderr_tail}")
            results[name].append(m)
    return results


def summarize(results: dict[str, list[harness.Measured]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, runs in results.items():
        out[name] = {"wall_s": [m.wall_s for m in runs], "cpu_s": [m.cpu_s for m in runs],
                     "peak_rss_mb": [m.peak_rss_mb for m in runs], "returncodes": [m.returncode for m in runs],
                     "statuses": runs[-1].extra.get("statuses")}
    for name, farm_name in PAIRS.items():  # each tool's default against the other's, and without storage
        farm, other = out[farm_name], out[name]
        other["farm_speedup"] = harness.median(other["wall_s"]) / harness.median(farm["wall_s"])
        other["farm_memory_ratio"] = harness.median(farm["peak_rss_mb"]) / harness.median(other["peak_rss_mb"])
        other["against"] = farm_name
    return out


def main() -> None:
    p = harness.parser(__doc__.splitlines()[0])
    args = p.parse_args()
    if not PROMPTFOO_BIN.exists():
        raise SystemExit(f"promptfoo is not installed: cd {PROMPTFOO_DIR} && npm install --no-save")
    if shutil.which("node") is None:
        raise SystemExit("node is not on PATH")
    harness.sigterm_as_interrupt()
    with harness.workdir("promptfoo") as tmp, harness.Processes(tmp) as procs:
        url = harness.start_agent_server(procs, 0)
        results = run_all(tmp, url, args.repeat)
    figures = summarize(results)
    print(f"\n1,000 evaluations ({CASES} cases x {REPEATS}), 0 ms HTTP agent, concurrency {CONCURRENCY}, no cache "
          f"(median of {args.repeat}; min-max)\n")
    rows = [[name, harness.spread(f["wall_s"]), harness.spread(f["cpu_s"]), harness.spread(f["peak_rss_mb"]),
             f.get("against", ""),
             f"{f['farm_speedup']:.2f}x" if "farm_speedup" in f else "",
             f"{f['farm_memory_ratio']:.2f}" if "farm_memory_ratio" in f else ""]
            for name, f in figures.items()]
    print(harness.table(["tool", "wall s", "CPU s", "peak RSS MB", "against", "farm faster by", "farm RSS / its"],
                        rows))
    print(f"\nfarm statuses: {figures['farm test']['statuses']}")
    harness.emit("promptfoo", figures, args.json_path)


if __name__ == "__main__":
    main()
