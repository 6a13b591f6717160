"""Test peer for fleet control: an HTTP server that counts requests per second and can play a
provider's rate limit (``tests/fleet/test_fleet_distributed.py`` hammers it with real ``farm worker``s).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer

from tests.support.servers import HOST, Served, load_example, serve_in_thread


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
