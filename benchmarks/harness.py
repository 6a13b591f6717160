"""What every benchmark script shares: processes it starts and always stops, measuring a
process tree (wall, CPU, peak RSS), suites written to a temporary directory, tables.

The machine is shared and noisy: scripts repeat each measurement and report medians. Nothing
here asserts on time; scripts print figures.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import platform
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
AGENTS = BENCH / "agents"
PYTHON = sys.executable
FARM = [PYTHON, "-m", "farm"]
POLL_S = 0.02
"""RSS sampling period of a measured process tree."""

if str(ROOT) not in sys.path:  # this checkout's farm, not whichever one is pip-installed
    sys.path.insert(1, str(ROOT))


# ------------------------------------------------------------------------------ processes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, timeout: float = 20.0, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout:g}s")


def wait_log(path: Path, text: str, timeout: float = 60.0, proc: subprocess.Popen[Any] | None = None) -> None:
    """Wait until ``text`` appears in a log file (a worker's "ready")."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.1)
    tail = path.read_text(errors="replace")[-2000:] if path.exists() else ""
    raise RuntimeError(f"{text!r} not in {path} after {timeout:g}s:\n{tail}")


def bench_env(**extra: str) -> dict[str, str]:
    """The environment of every child: the repo importable, benchmarks/agents importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(BENCH), str(AGENTS), env.get("PYTHONPATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    # an installed farm runs from compiled bytecode (pip compiles at install); where the session sets
    # PYTHONDONTWRITEBYTECODE, a tree never compiled (a --before export) would recompile every run
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra)
    return env


def kill_tree(proc: subprocess.Popen[Any], grace: float = 5.0) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left of it."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=grace)


class Processes:
    """Background processes (servers, Redis, workers) stopped on exit, Ctrl-C included.

    Each child leads its own process group, so stopping it stops its children (a prefork
    worker's pool) too; only these groups are signalled.
    """

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self._procs: list[subprocess.Popen[Any]] = []

    def start(self, name: str, cmd: Sequence[str], *, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> tuple[subprocess.Popen[Any], Path]:
        log = self.logdir / f"{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT, env=env or bench_env(),
                                    cwd=cwd or ROOT, start_new_session=True)
        self._procs.append(proc)
        return proc, log

    def stop(self, proc: subprocess.Popen[Any]) -> None:
        kill_tree(proc)
        with contextlib.suppress(ValueError):
            self._procs.remove(proc)

    def stop_all(self) -> None:
        for proc in reversed(self._procs):
            with contextlib.suppress(Exception):
                kill_tree(proc)
        self._procs.clear()

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()


def sigterm_as_interrupt() -> None:
    """SIGTERM and SIGINT raise KeyboardInterrupt, so every ``finally`` (process clean-up) runs.

    SIGINT is set explicitly: a script started in the background by a shell inherits it ignored.
    """

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def start_redis(procs: Processes, port: int | None = None, *, bind: str = "127.0.0.1") -> str:
    """A private redis-server without persistence; returns its URL."""
    port = port or free_port()
    procs.start(f"redis-{port}", ["redis-server", "--port", str(port), "--bind", bind, "--save", "",
                                  "--appendonly", "no", "--protected-mode", "no"])
    wait_port(port, host=bind)
    return f"redis://{bind}:{port}/0"


def start_agent_server(procs: Processes, delay_ms: float = 0.0, *, port: int | None = None,
                       host: str = "127.0.0.1") -> str:
    """benchmarks/agents/http_agent.py in its own process; returns its URL."""
    port = port or free_port()
    procs.start(f"agent-{port}", [PYTHON, str(AGENTS / "http_agent.py"), "--host", host, "--port", str(port),
                                  "--delay-ms", str(delay_ms)])
    wait_port(port, host=host)
    return f"http://{host}:{port}/"


def flush_redis(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.flushall()
    finally:
        client.close()


# ------------------------------------------------------------------------------ measuring


@dataclass
class Measured:
    """One measured child process (and its descendants)."""

    wall_s: float
    cpu_s: float
    """User + system CPU of the child and its waited-for descendants."""
    peak_rss_mb: float
    """Peak of the summed RSS of the process tree, sampled every POLL_S."""
    returncode: int
    stderr_tail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class RssSampler(threading.Thread):
    """Peak summed RSS of a process tree, sampled every POLL_S until ``done`` is set."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(self.pid)
            while not self.done.is_set():
                total = 0
                with contextlib.suppress(psutil.Error):
                    for proc in [root, *root.children(recursive=True)]:
                        with contextlib.suppress(psutil.Error):
                            total += proc.memory_info().rss
                self.peak = max(self.peak, total)
                self.done.wait(POLL_S)


def measure(cmd: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 900.0, spy_out: Path | None = None) -> Measured:
    """Run ``cmd`` to its end: wall time, CPU (rusage of waited children), peak tree RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=err, env=env or bench_env(),
                                cwd=cwd or ROOT, start_new_session=True)
        sampler = RssSampler(proc.pid)
        sampler.start()
        try:
            code = _wait(proc, timeout, spy_out)
        finally:
            wall = time.perf_counter() - start
            sampler.done.set()
            kill_tree(proc)
        err.seek(0)
        out.seek(0)
        tail, stdout = err.read().decode(errors="replace")[-1500:], out.read().decode(errors="replace")[-4000:]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Measured(wall, cpu, sampler.peak / 2**20, code, tail, {"stdout": stdout})


def _wait(proc: subprocess.Popen[Any], timeout: float, spy_out: Path | None) -> int:
    with contextlib.ExitStack() as stack:
        if spy_out is not None:
            import spy

            stack.enter_context(spy.recording(proc.pid, spy_out))
        return _blocking_wait(proc, timeout)


def _blocking_wait(proc: subprocess.Popen[Any], timeout: float) -> int:
    """``proc.wait()`` blocking in waitpid, a timer ending it after ``timeout``: ``wait(timeout=…)``
    polls, sleeping up to 50 ms between looks, which rounded a short command's wall up by as much."""
    expired = threading.Event()

    def end() -> None:
        expired.set()
        kill_tree(proc)

    timer = threading.Timer(timeout, end)
    timer.daemon = True
    timer.start()
    try:
        code = proc.wait()
    finally:
        timer.cancel()
    if expired.is_set():
        raise subprocess.TimeoutExpired(proc.args, timeout)
    return code


def rss_mb(pid: int) -> float:
    """Current RSS of a process tree."""
    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / 2**20


# ------------------------------------------------------------------------------ inputs


def write_suite(path: Path, cases: int, *, word: str = "pong") -> Path:
    """A Yao JSONL suite: ``cases`` one-turn cases, each with one ``contains`` check."""
    lines = [json.dumps({"id": f"C{i:05d}", "input": f"say {word} number {i}",
                         "assert": {"type": "contains", "value": word}}) for i in range(cases)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@contextlib.contextmanager
def workdir(prefix: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"farm-bench-{prefix}-") as tmp:
        yield Path(tmp)


def jsonl_counts(path: Path) -> dict[str, int]:
    """Counts of result statuses in a farm JSONL stream (checks that a sweep ran)."""
    counts: dict[str, int] = {}
    with path.open(encoding="utf-8") as stream:
        for line in stream:
            if '"type": "result"' in line or '"type":"result"' in line:
                status = json.loads(line).get("status", "?")
                counts[status] = counts.get(status, 0) + 1
    return counts


# ------------------------------------------------------------------------------ output


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def num(value: float) -> str:
    """Three significant digits, without exponents."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def spread(values: Sequence[float]) -> str:
    """``median (min–max)`` of repeated measurements."""
    if not values:
        return "n/a"
    return f"{num(median(values))} ({num(min(values))}–{num(max(values))})"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def machine() -> dict[str, str]:
    """What the figures were measured on."""
    import celery
    import redis

    cpu = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    redis_version = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.split()
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory_gb": f"{psutil.virtual_memory().total / 2**30:.1f}",
        "os": platform.platform(),
        "python": platform.python_version(),
        "redis_server": next((w[2:] for w in redis_version if w.startswith("v=")), "?"),
        "celery": celery.__version__,
        "redis_py": redis.__version__,
    }


def compile_bytecode() -> None:
    """Write the bytecode of this checkout's farm, as ``pip install`` does for an installed one.

    Python only reads ``__pycache__`` when ``PYTHONDONTWRITEBYTECODE`` is set (this project's
    machines set it): without this, every ``farm`` process measured would compile its ~200
    modules from source first (0.2-0.3 s a start here), which no installed farm does.
    """
    for package in ("farm", "workers"):
        compileall.compile_dir(ROOT / package, quiet=1, force=False)


def parser(description: str) -> argparse.ArgumentParser:
    compile_bytecode()  # every script starts here, before it measures anything
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--repeat", type=int, default=3, help="repetitions per measurement (medians are reported)")
    p.add_argument("--json", dest="json_path", default=None, metavar="FILE", help="also write the figures as JSON")
    return p


def emit(name: str, figures: dict[str, Any], json_path: str | None) -> None:
    """Write the figures as JSON when asked (the table is printed by the script)."""
    if json_path:
        payload = {"benchmark": name, "machine": machine(), "figures": figures}
        Path(json_path).write_text(json.dumps(payload, indent=2, default=_jsonable) + "\n", encoding="utf-8")
        print(f"figures: {json_path}")


def _jsonable(value: Any) -> Any:
    if isinstance(value, Measured):
        return asdict(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(type(value).__name__)


# ------------------------------------------------------------------------------ the farm in-process


@dataclass
class SweepTiming:
    wall_s: float
    cpu_s: float
    """CPU of this whole process (every thread) during the sweep."""
    runs: int
    by_status: dict[str, int]


def sweep_in_process(suite: Path, agent: str, *, runs: int, parallel: int, out: Path,
                     broker: str | None = None) -> SweepTiming:
    """``farm test`` as a library call (load, plan, execute, JSONL stream): no interpreter start-up."""
    from farm.api import TestSettings, create_executor, prepare_sweep
    from farm.sweep.observers import JsonlObserver, Observers

    settings = TestSettings(input=str(suite), name=agent, runs=runs, parallel=parallel, outputs=(str(out),),
                            broker=broker, cwd=str(ROOT))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    prepared = prepare_sweep(settings)
    with out.open("w", encoding="utf-8") as stream:
        report = create_executor(prepared.specs.executor).run(prepared.plan, Observers(JsonlObserver(stream)))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return SweepTiming(wall, cpu, report.summary.total_runs, dict(report.summary.by_status))
