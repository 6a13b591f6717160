"""A timeout cancels the work: the farm closes the timed-out request's connection (issue 29).

A real HTTP server on 127.0.0.1 records, per request, when it arrived and when the client hung
up. Two cases run side by side: ``hang`` (a 1 s timeout; the server never finishes its answer)
and ``slow`` (answered after ``SLOW_S`` seconds). The farm is still running ``slow`` when
``hang`` times out, so a connection left open would only close at the sweep's end, after
``slow`` was answered. Per adapter: the farm's HTTP JSON agent (hangs before its headers),
neuro-san's streaming chat (hangs after the headers and a first line) and an OpenAI-compatible
connector under a prompt agent (hangs before its headers).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.formats_fixtures import farm_process, make_project
from tests.servers import HOST, serve_in_thread

TIMEOUT_S = 1.0
SLOW_S = 6.0
"""``slow``'s answer comes this long after its request: the sweep is alive well past ``hang``'s timeout."""
SLACK_S = 3.0
"""How long after the timeout the hang-up may come (a busy machine); far below ``SLOW_S``."""
HOLD_S = 60.0
"""How long the server waits for a hang-up before giving up on it."""


@dataclass
class Seen:
    hang: bool
    arrived: float
    closed: float | None = None
    answered: float | None = None


class _Handler(BaseHTTPRequestHandler):
    server: _RecordingServer

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        seen = Seen(hang="hang" in body, arrived=time.monotonic())
        with self.server.lock:
            self.server.seen.append(seen)
        if seen.hang:
            if self.server.protocol == "neuro-san":  # the stream has begun: headers and a first line
                self._start("application/json-lines")
                self.wfile.write(b'{"response": {"type": "AGENT_PROGRESS", "text": "working"}}\n')
                self.wfile.flush()
            seen.closed = self._wait_for_hangup()
            return
        time.sleep(SLOW_S)
        seen.answered = time.monotonic()
        self._start("application/json")
        self.wfile.write(json.dumps(self._answer()).encode() + b"\n")

    def _start(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")
        self.end_headers()

    def _answer(self) -> dict[str, Any]:
        if self.server.protocol == "neuro-san":
            return {"response": {"type": "AGENT_FRAMEWORK", "text": "ok", "chat_context": {}}}
        if self.server.protocol == "openai":
            return {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                 "finish_reason": "stop"}]}
        return {"output": "ok"}

    def _wait_for_hangup(self) -> float | None:
        """When the client closed the connection (read gives EOF or a reset), None if it never did."""
        sock: socket.socket = self.connection
        deadline = time.monotonic() + HOLD_S
        while time.monotonic() < deadline:
            readable, _, _ = select.select([sock], [], [], 0.02)
            if not readable:
                continue
            try:
                if not sock.recv(4096):
                    return time.monotonic()
            except OSError:
                return time.monotonic()
        return None


class _RecordingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, protocol: str) -> None:
        super().__init__((HOST, 0), _Handler)
        self.protocol = protocol
        self.lock = threading.Lock()
        self.seen: list[Seen] = []


@contextlib.contextmanager
def recording_server(protocol: str) -> Iterator[Any]:
    with serve_in_thread(_RecordingServer(protocol)) as served:
        yield served


CASES = [{"id": "hang", "input": "hang", "timeout": f"{TIMEOUT_S:g}s"},
         {"id": "slow", "input": "slow", "timeout": "60s"}]


@pytest.mark.parametrize("adapter", ["http", "neuro-san", "openai"])
def test_a_timed_out_request_is_hung_up_on(tmp_path: Path, adapter: str) -> None:
    protocol = {"http": "json", "neuro-san": "neuro-san", "openai": "openai"}[adapter]
    with recording_server(protocol) as served:
        project = make_project(tmp_path, served.url)  # its prompt agent's connector is this server
        suite = project.suite(CASES)
        name = {"http": ["-n", served.url], "neuro-san": ["-n", f"neuro-san://{HOST}:{served.port}/slowpoke"],
                "openai": []}[adapter]
        done = farm_process(project, "test", "-i", str(suite), *name, "--parallel", "2", "--no-progress",
                            "--no-history", "-o", str(tmp_path / "r.json"))
        assert done.returncode == 1, done.stderr
        with served.server.lock:
            seen = list(served.server.seen)
    report = json.loads((tmp_path / "r.json").read_text())
    statuses = {c["id"]: c["run_details"][0]["status"] for c in report["results"]}
    assert statuses == {"hang": "timeout", "slow": "passed"}, done.stderr
    hang = next(s for s in seen if s.hang)
    slow = next(s for s in seen if not s.hang)
    assert hang.closed is not None, "the server never saw the farm hang up"
    assert slow.answered is not None and hang.closed < slow.answered, "hung up only when the sweep ended"
    assert hang.closed - hang.arrived < TIMEOUT_S + SLACK_S, hang.closed - hang.arrived
