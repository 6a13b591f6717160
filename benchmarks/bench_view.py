"""``farm view`` of a 30,000-case sweep: a sweep's page, whole HTTP responses (issue 45).

    python benchmarks/bench_view.py [--cases 30000] [--runs 2] [--repeat 3] [--before REV] [--data DIR] [--json FILE]

The sweep is a real one: ``farm test`` of a generated suite (``--cases`` one-turn cases,
``--runs`` runs each) against an in-process python agent that passes four cases in five, with
its run journal and history under ``--data`` (built there once and kept when given: a 30,000-case
sweep takes minutes to run).

Each repetition starts a fresh ``farm view`` and, timing whole responses with a plain HTTP client:

- ``cold``: the sweep's page, first request of the server: this checkout reads the index the sweep
  kept beside its journal when it ended (``farm.sweep.kept``: every case in brief, the first 100
  cases read whole with their runs from the journal) and renders the page; a checkout before the
  index (``--before``), or a journal without one (a sweep killed before its end), replays the
  journal instead (the report rebuilt, in a child process);
- ``warm``: the same page again (kept); ``page 2``: ``/api/sweeps/ID/cases?page=2`` (its 100 cases
  read whole); ``search``: the first search, over every case's id, outputs and errors
  (``q=c00123``): every case read whole once; ``search again``: another (``q=c04567``);
- the server's RSS after these, its own peak (``VmHWM``), and the peak of the server with its
  children (sampled every 20 ms: a replay runs in a child process).

``--before REV`` also measures that commit's farm, alternating with this checkout's in the same
run: its first page's time and bytes and the server's RSS.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import harness

AGENT = '''
def respond(messages, context):
    n = int(messages[-1]["content"].split()[-1])
    return "pong" if n % 5 else f"no answer for {n}"
'''


def build(data: Path, cases: int, runs: int) -> str:
    """The sweep's id; runs ``farm test`` into ``data`` unless a sweep is already there."""
    journals = data / "journals"
    if journals.is_dir() and list(journals.glob("*.jsonl")):
        (journal,) = journals.glob("*.jsonl")
        return journal.stem
    data.mkdir(parents=True, exist_ok=True)
    (data / "agent.py").write_text(AGENT)
    harness.write_suite(data / "suite.jsonl", cases)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "farm", "test", "-i", "suite.jsonl", "-n", "py:agent.py:respond",
                           "--runs", str(runs), "--no-progress", "-o", str(data / "report.json")],
                          cwd=data, env=harness.bench_env(FARM_DATA_DIR=str(data), FARM_SEMANTIC="0"),
                          capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"farm test failed ({done.returncode}): {done.stderr[-1500:]}")
    print(f"built {cases:,} cases × {runs} runs in {time.perf_counter() - start:.0f} s")
    (journal,) = journals.glob("*.jsonl")
    return journal.stem


def get(url: str) -> tuple[float, int]:
    """Seconds for the whole response, and its bytes."""
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=1800) as reply:
        size = len(reply.read())
    return time.perf_counter() - start, size


def rss(pid: int) -> tuple[float, float]:
    """The process's RSS now and its peak, in MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def one(data: Path, sweep_id: str, code: Path | None) -> dict[str, float]:
    env = harness.bench_env(FARM_DATA_DIR=str(data))
    if code is not None:
        env["PYTHONPATH"] = f"{code}:{env['PYTHONPATH']}"
    port = harness.free_port()
    view = subprocess.Popen([sys.executable, "-m", "farm", "view", "--port", str(port)], cwd=code or data, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    sampler = harness.RssSampler(view.pid)
    try:
        harness.wait_port(port, timeout=120)
        sampler.start()
        base = f"http://127.0.0.1:{port}"
        figures: dict[str, float] = {}
        figures["cold_s"], figures["cold_bytes"] = get(f"{base}/sweeps/{sweep_id}")
        if code is None:
            figures["warm_s"], figures["warm_bytes"] = get(f"{base}/sweeps/{sweep_id}")
            figures["page2_s"], figures["page2_bytes"] = get(f"{base}/api/sweeps/{sweep_id}/cases?page=2")
            figures["search_s"], _ = get(f"{base}/api/sweeps/{sweep_id}/cases?q=c00123")
            figures["search_again_s"], _ = get(f"{base}/api/sweeps/{sweep_id}/cases?q=c04567")
        figures["rss_mb"], figures["peak_rss_mb"] = rss(view.pid)
        sampler.done.set()
        figures["tree_peak_rss_mb"] = sampler.peak / 2**20
        return figures
    finally:
        sampler.done.set()
        harness.kill_tree(view)


def main() -> None:
    parser = harness.parser(__doc__ or "")
    parser.add_argument("--cases", type=int, default=30_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--before", default=None, metavar="REV", help="also measure this commit's farm")
    parser.add_argument("--data", default=None, metavar="DIR", help="build the sweep here, or reuse the one here")
    args = parser.parse_args()
    from bench_compare_speed import export

    figures: dict[str, Any] = {}
    with harness.workdir("view") as tmp:
        data = Path(args.data).resolve() if args.data else tmp / "data"
        sweep_id = build(data, args.cases, args.runs)
        codes: dict[str, Path | None] = {"this": None}
        if args.before:
            (tmp / "before").mkdir()
            codes["before"] = export(args.before, tmp / "before")
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in codes}
        for _ in range(args.repeat):
            for name, code in codes.items():
                samples[name].append(one(data, sweep_id, code))
        rows = []
        for name, runs in samples.items():
            figures[name] = {key: [r[key] for r in runs] for key in runs[0]}
            for key in runs[0]:
                values = figures[name][key]
                shown = [v / 1e6 for v in values] if key.endswith("_bytes") else values
                unit = "MB" if key.endswith("_bytes") else ""
                rows.append([name, key.replace("_bytes", "") + (" size" if unit else ""), harness.spread(shown), unit])
        print(harness.table(["farm", "figure", "median (range)", "unit"], rows))
    harness.emit("view", figures, args.json_path)


if __name__ == "__main__":
    main()
