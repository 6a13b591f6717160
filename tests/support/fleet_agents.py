"""Test peers for fleet control on workers (``tests/fleet/test_fleet_workers.py``): an HTTP agent that
reports a fixed usage per call and counts its calls and peak concurrency, and a ``py:`` agent
file doing the same through a directory of marker files (workers are other processes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path

from tests.support.servers import HOST, ROOT, Served, load_example, serve_in_thread

LATE_STARTS = 2
"""Starts a 1-second window may hold past a rate limit: they are timed where the agent starts, a
thread or process scheduled after the farm's grant; on a loaded 2-core machine (four test processes
beside a CPU hog) some start ~0.4 s late, so starts granted just before a window fall in it (seen:
7 at 5/s). Unenforced, these tests' limits run at 10/s (3 in flight of 0.3 s calls): still caught.
Beside a CPU hog and other suites (load 10) a 1-second window once held 8 at 5/s: where a sweep
is long enough, count over ``RATE_WINDOW_S`` instead, allowing ``LATE_S`` of late starts."""
RATE_WINDOW_S, LATE_S = 3.0, 1.0
"""A window that a late start stretches by at most ``LATE_S``: at most rate × (3 + 1) starts
enforced, against rate × 2 × 3 unenforced (20 against 30 at 5/s)."""

USAGE = {"input_tokens": 10, "output_tokens": 0}
"""What each call reports: at 1000 USD per million input tokens, $0.01."""
PRICE = {"input": 1000.0, "output": 1000.0}


class UsageServer(ThreadingHTTPServer):
    """Answers each POST ``{"text": "yes"|"no", "usage": USAGE}`` after ``delay_s``; counts calls,
    the calls in flight at once (peak) and each call's start time. The answer is parity of the
    request's run number (``even_yes``) or always yes."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, delay_s: float = 0.0) -> None:
        common = load_example("_common")
        super().__init__((HOST, 0), _handler(common.JsonHandler))
        self.lock = threading.Lock()
        self.delay_s = delay_s
        self.calls = 0
        self.in_flight = 0
        self.peak = 0
        self.starts: list[float] = []

    def enter(self) -> None:
        with self.lock:
            self.calls += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.starts.append(time.time())

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def max_starts_within(self, window_s: float) -> int:
        """The most calls that started in any window of ``window_s`` (sliding, from each start)."""
        with self.lock:
            starts = sorted(self.starts)
        return max((sum(1 for t in starts[i:] if t < s + window_s) for i, s in enumerate(starts)), default=0)


def _handler(base: type) -> type:
    class Handler(base):  # type: ignore[misc, valid-type]
        server: UsageServer

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            self.server.enter()
            try:
                time.sleep(self.server.delay_s)
                run = int((body.get("context") or {}).get("run") or body.get("run") or 0)
                self.send_json(200, {"text": "yes" if run % 2 == 0 else "no", "usage": USAGE})
            finally:
                self.server.leave()

    return Handler


@contextmanager
def usage_server(delay_s: float = 0.0) -> Iterator[tuple[Served, UsageServer]]:
    server = UsageServer(delay_s)
    with serve_in_thread(server) as served:
        yield served, server


MARKS = '''
import os, time, uuid
DIR = {directory!r}


def marked(run):
    """One call: a marker file while in flight; the calls in flight and the start time noted."""
    mark = os.path.join(DIR, "in-" + uuid.uuid4().hex)
    open(mark, "w").close()
    try:
        peak = len([n for n in os.listdir(DIR) if n.startswith("in-")])
        with open(os.path.join(DIR, "peaks"), "a") as out:
            out.write(f"{{peak}} {{time.time()}}\\n")
        time.sleep({delay_s!r})
    finally:
        os.rename(mark, os.path.join(DIR, "done-" + os.path.basename(mark)[3:]))
    return "yes" if run % 2 == 0 else "no"
'''
PY_AGENT = MARKS + '''
from farm.models import Reply


def respond(messages, context):
    return Reply(text=marked(context.run), usage={usage!r})
'''
CMD_AGENT = MARKS + '''
import json, sys

request = json.load(sys.stdin)
json.dump({{"text": marked(int(request["context"]["run"])), "usage": {usage!r}}}, sys.stdout)
'''


def write_py_agent(root: Path, delay_s: float = 0.0) -> tuple[str, Path]:
    """A ``py:`` agent counting its calls (``done-*`` files) and concurrency (``peaks``) in a directory."""
    path, directory = _write_counting(root, "py", PY_AGENT, delay_s)
    return f"py:{path}:respond", directory


def write_cmd_agent(root: Path, delay_s: float = 0.0) -> tuple[str, Path]:
    """The same as a ``cmd:`` agent (a program reading the request on stdin)."""
    path, directory = _write_counting(root, "cmd", CMD_AGENT, delay_s)
    return f"cmd:{sys.executable} {path}", directory


def _write_counting(root: Path, kind: str, template: str, delay_s: float) -> tuple[Path, Path]:
    directory = root / f"{kind}-calls"
    directory.mkdir()
    path = root / f"counting_{kind}.py"
    path.write_text(template.format(directory=str(directory), delay_s=delay_s, usage=USAGE))
    return path, directory


def starts_per_second(directory: Path) -> int:
    """The most calls that started in any 1-second window (sliding, from each start)."""
    peaks = directory / "peaks"
    starts = sorted(float(line.split()[1]) for line in peaks.read_text().splitlines()) if peaks.exists() else []
    return max((sum(1 for t in starts[i:] if t < s + 1.0) for i, s in enumerate(starts)), default=0)


def py_calls(directory: Path) -> int:
    return sum(1 for name in (p.name for p in directory.iterdir()) if name.startswith(("done-", "in-")))


def py_peak(directory: Path) -> int:
    peaks = directory / "peaks"
    return max((int(line.split()[0]) for line in peaks.read_text().splitlines()), default=0) if peaks.exists() else 0


def farm_test(*args: str, env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``farm test ARGS`` in-process (no broker), from this repository (its code, not an installed one)."""
    full = {**os.environ, **(env or {})}
    full.pop("FARM_BROKER_URL", None)
    return subprocess.run([sys.executable, "-m", "farm", "test", "--no-progress", "--no-history", *args], cwd=ROOT,
                          env=full, capture_output=True, text=True, timeout=timeout)
