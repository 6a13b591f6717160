"""Distributed pieces for the benchmarks: workers (the farm's and raw Celery's) and sweeps.

Workers run as separate process groups under ``harness.Processes`` and are stopped by it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness


def wait_workers(broker: str, names: Sequence[str], timeout: float = 60.0) -> None:
    """Until every named worker answers a ping on ``broker``."""
    from celery import Celery

    app = Celery("bench-ping", broker=broker, set_as_current=False)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            replies = app.control.ping(timeout=0.5) or []
            seen = {name.split("@")[0] for reply in replies for name in reply}
            if all(_answered(n.split("@")[0], seen) for n in names):
                return
        raise RuntimeError(f"workers {list(names)} did not answer on {broker} within {timeout:g}s")
    finally:
        app.close()


def _answered(name: str, seen: set[str]) -> bool:
    """``name`` itself, or one of its processes (``farm worker`` names them NAME-1, NAME-2, …)."""
    return name in seen or any(s.startswith(f"{name}-") and s[len(name) + 1:].isdigit() for s in seen)


def farm_worker(procs: harness.Processes, broker: str, name: str, *args: str,
                netns: str | None = None) -> Any:
    """``farm worker --broker URL`` (its defaults unless ``args`` say otherwise)."""
    cmd = [*harness.FARM, "worker", "--broker", broker, "-n", f"{name}@%h", *args]
    proc, _log = procs.start(name, _in_netns(cmd, netns))
    return proc


NO_EVENTS = {"worker_send_task_events": False, "task_send_sent_event": False}
"""What-if: the farm without Celery task events (Flower sees no tasks then)."""
WHATIF = [harness.PYTHON, str(harness.AGENTS / "whatif.py")]


def whatif_env(overrides: dict[str, Any]) -> dict[str, str]:
    return harness.bench_env(BENCH_CELERY_OVERRIDES=json.dumps(overrides))


def whatif_worker(procs: harness.Processes, broker: str, name: str, overrides: dict[str, Any],
                  concurrency: int = 64) -> Any:
    """``farm worker``'s setup (threads, its queue and settings) with ``overrides``, at WARNING."""
    cmd = [*WHATIF, "celery", "worker", "-Q", "farm", "-P", "threads", "-c", str(concurrency), "-l", "WARNING",
           "-n", f"{name}@%h"]
    proc, _log = procs.start(name, cmd, env=harness.bench_env(FARM_BROKER_URL=broker,
                                                               BENCH_CELERY_OVERRIDES=json.dumps(overrides)))
    return proc


def raw_worker(procs: harness.Processes, broker: str, name: str, *, pool: str, concurrency: int,
               loglevel: str = "WARNING") -> Any:
    """``celery -A raw_celery worker`` on queue ``bench``."""
    cmd = [harness.PYTHON, "-m", "celery", "-A", "raw_celery", "worker", "-Q", "bench", "-P", pool,
           "-c", str(concurrency), "-n", f"{name}@%h", "-l", loglevel]
    proc, _log = procs.start(name, cmd, env=harness.bench_env(BENCH_BROKER=broker))
    return proc


def _in_netns(cmd: list[str], netns: str | None) -> list[str]:
    return cmd if netns is None else ["ip", "netns", "exec", netns, *cmd]


@dataclass
class SweepRun:
    """One ``farm test`` (or raw submitter) process: its wall, and the sweep's own duration."""

    runs: int
    wall_s: float
    sweep_s: float
    """farm: the summary's duration_ms (stored → report); raw: first publish → last result."""
    cpu_s: float
    peak_rss_mb: float
    statuses: dict[str, int]


def farm_sweep(suite: Path, agent: str, runs: int, out: Path, *, broker: str | None = None,
               parallel: int = 1, extra: Sequence[str] = (), spy_out: Path | None = None,
               overrides: dict[str, Any] | None = None) -> SweepRun:
    """``farm test`` in a child process, in-process or on ``broker`` (``overrides``: a what-if)."""
    farm = [*WHATIF, "farm"] if overrides else harness.FARM
    cmd = [*farm, "test", "-i", str(suite), "-n", agent, "--runs", str(runs), "-o", str(out),
           "--parallel", str(parallel), "--no-progress", *extra]
    if broker:
        cmd += ["--broker", broker]
    m = harness.measure(cmd, spy_out=spy_out, env=whatif_env(overrides) if overrides else None)
    if m.returncode != 0:
        raise RuntimeError(f"farm test exited {m.returncode}:\n{m.stderr_tail}")
    summary = _last_summary(out)
    statuses = dict(summary.get("by_status") or harness.jsonl_counts(out))
    return SweepRun(int(summary["total_runs"]), m.wall_s, float(summary["duration_ms"]) / 1000, m.cpu_s,
                    m.peak_rss_mb, statuses)


def warm_up(suite: Path, agent: str, out: Path, broker: str) -> None:
    """One run per case on fresh workers, whatever its outcome (imports, connections, caches)."""
    cmd = [*harness.FARM, "test", "-i", str(suite), "-n", agent, "--runs", "1", "-o", str(out), "--no-progress",
           "--broker", broker]
    m = harness.measure(cmd)
    if m.returncode not in (0, 1):
        raise RuntimeError(f"warm-up farm test exited {m.returncode}:\n{m.stderr_tail}")


def _last_summary(path: Path) -> dict[str, Any]:
    with path.open("rb") as stream:
        stream.seek(0, 2)
        stream.seek(max(stream.tell() - 65536, 0))
        lines = stream.read().decode().splitlines()
    for line in reversed(lines):
        if '"summary"' in line:
            event = json.loads(line)
            return event.get("summary", event)  # type: ignore[no-any-return]
    raise RuntimeError(f"{path}: no summary line")


def raw_sweep(broker: str, task: str, n: int, ms: float = 0.0, url: str = "") -> SweepRun:
    """raw_celery.py's submitter in a child process (``url``: the agent server of ``--task post``)."""
    m = harness.measure([harness.PYTHON, str(harness.BENCH / "raw_celery.py"), "--broker", broker,
                         "--task", task, "--n", str(n), "--ms", str(ms), "--url", url])
    if m.returncode != 0:
        raise RuntimeError(f"raw submitter exited {m.returncode}:\n{m.stderr_tail}")
    figures = json.loads(m.extra["stdout"].strip().splitlines()[-1])
    return SweepRun(n, m.wall_s, float(figures["elapsed_s"]), m.cpu_s, m.peak_rss_mb, {"passed": n})
