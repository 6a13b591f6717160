"""Test peers for load (SPEC 25): an HTTP agent on 127.0.0.1 that answers ``no`` while more than
``k`` requests are in flight at it (load-sensitive), or answers by the run's parity whatever its
load (load-blind: half its runs fail, the same at any load)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path

from tests.support.servers import HOST, Served, load_example, serve_in_thread


class LoadServer(ThreadingHTTPServer):
    """Holds each POST ``delay_s`` to twice that (the n-th request ``delay_s × (1 + (n mod 10)/10)``:
    answers that come back together would free the server at once while the farm, reading them one
    by one, still counts them in flight); answers ``{"text": "yes"|"no"}``. ``k``: the most requests
    in flight (this one included) it answers ``yes`` under; None: load-blind (``yes`` for even
    runs). It leaves the count before it answers, so a client never sees more in flight than it sent."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, k: int | None, delay_s: float) -> None:
        common = load_example("_common")
        super().__init__((HOST, 0), _handler(common.JsonHandler))
        self.k, self.delay_s = k, delay_s
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        self.requests = 0

    def answer(self, run: int) -> str:
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            load = self.in_flight
            self.requests += 1
            delay = self.delay_s * (1 + (self.requests % 10) / 10)
        try:
            time.sleep(delay)
        finally:
            with self.lock:
                self.in_flight -= 1
        if self.k is None:
            return "yes" if run % 2 == 0 else "no"
        return "yes" if load <= self.k else "no"


def _handler(base: type) -> type:
    class Handler(base):  # type: ignore[misc, valid-type]
        server: LoadServer

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            run = int((body.get("context") or {}).get("run") or 0)
            self.send_json(200, {"text": self.server.answer(run)})

    return Handler


@contextmanager
def load_server(k: int | None, delay_s: float = 0.2) -> Iterator[tuple[Served, LoadServer]]:
    server = LoadServer(k, delay_s)
    with serve_in_thread(server) as served:
        yield served, server


def write_suite(path: Path, cases: int = 1) -> Path:
    """``cases`` cases that pass when the agent says yes."""
    lines = [json.dumps({"id": f"L{i}", "input": "are you well?", "assert": {"type": "contains", "value": "yes"}})
             for i in range(1, cases + 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
