"""Test peers for fleet control: an HTTP server that counts requests per second and can play a
provider's rate limit, and the processes that hammer it (``tests/fleet_hammer.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.servers import HOST, ROOT, Served, load_example, serve_in_thread

HAMMER = Path(__file__).with_name("fleet_hammer.py")


class CountingServer(ThreadingHTTPServer):
    """Answers every POST ``{"ok": true}`` and records when it came; with ``capacity`` set, the
    requests beyond it in the current wall-clock second get 429 with ``Retry-After: 1``."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self) -> None:
        common = load_example("_common")
        super().__init__((HOST, 0), _handler(common.JsonHandler))
        self.lock = threading.Lock()
        self.arrivals: list[tuple[float, int]] = []
        """(time.time() on arrival, status answered)."""
        self.capacity: int | None = None
        self._accepted: Counter[int] = Counter()

    def answer(self) -> int:
        now = time.time()
        with self.lock:
            second = int(now)
            status = 200
            if self.capacity is not None and self._accepted[second] >= self.capacity:
                status = 429
            else:
                self._accepted[second] += 1
            self.arrivals.append((now, status))
            return status

    def per_second(self, start: float, end: float, *, status: int | None = None) -> list[int]:
        """Arrivals in each whole wall-clock second inside [start, end) (of one status, or all)."""
        with self.lock:
            seconds = Counter(int(t) for t, s in self.arrivals if start <= t < end and status in (None, s))
        return [seconds[s] for s in range(int(start) + 1, int(end))]

    def count(self, start: float, end: float, *, status: int | None = None) -> int:
        with self.lock:
            return sum(1 for t, s in self.arrivals if start <= t < end and status in (None, s))

    def first(self, status: int) -> float | None:
        with self.lock:
            return next((t for t, s in self.arrivals if s == status), None)


def _handler(base: type) -> type:
    class Handler(base):  # type: ignore[misc, valid-type]
        server: CountingServer

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status = self.server.answer()
            if status == 429:
                self.send_json(429, {"error": {"message": "slow down"}}, {"Retry-After": "1"})
            else:
                self.send_json(200, {"ok": True})

    return Handler


@contextmanager
def counting_server() -> Iterator[tuple[Served, CountingServer]]:
    server = CountingServer()
    with serve_in_thread(server) as served:
        yield served, server


class Hammers:
    """Several ``fleet_hammer.py`` processes, started together once all are ready."""

    def __init__(self, count: int, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.processes = [
            subprocess.Popen([sys.executable, str(HAMMER), *args], cwd=ROOT, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
            for _ in range(count)
        ]

    def go(self, timeout: float = 60.0) -> float:
        """Wait for every process to be ready, then start them all; returns the start time."""
        for process in self.processes:
            assert process.stdout is not None
            line = process.stdout.readline()
            if line.strip() != "ready":
                raise RuntimeError(f"hammer not ready: {line!r} {process.stderr.read() if process.stderr else ''}")
        started = time.time()
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        return started

    def results(self, timeout: float = 120.0) -> list[dict[str, Any]]:
        out = []
        for process in self.processes:
            stdout, stderr = process.communicate(timeout=timeout)
            assert process.returncode == 0, stderr[-3000:]
            out.append(json.loads(stdout.strip().splitlines()[-1]))
        return out

    def kill(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
