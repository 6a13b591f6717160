"""A real OTLP/HTTP trace receiver for tests: decodes each ``POST /v1/traces`` body with
``opentelemetry-proto`` (an ``ExportTraceServiceRequest``) and keeps the spans it held."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from tests.support.servers import HOST, Served, serve_in_thread


@dataclass
class ReceivedSpan:
    """One span as the receiver decoded it: its name, attributes, events, parent and status."""

    name: str
    span_id: bytes
    parent_id: bytes
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    service: str


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


class OtlpServer(HTTPServer):
    def __init__(self) -> None:
        super().__init__((HOST, 0), _Handler)
        self.spans: list[ReceivedSpan] = []
        self.paths: list[str] = []
        self.lock = threading.Lock()

    def wait_for(self, name: str, count: int = 1, timeout: float = 60.0) -> list[ReceivedSpan]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                found = [s for s in self.spans if s.name == name]
            if len(found) >= count:
                return found
            time.sleep(0.05)
        raise AssertionError(f"{count} {name} span(s) not received in {timeout}s: got {self.spans}")


class _Handler(BaseHTTPRequestHandler):
    server: OtlpServer

    def do_POST(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        received = []
        for resource_spans in request.resource_spans:
            service = str(_attributes(resource_spans.resource.attributes).get("service.name"))
            for scope in resource_spans.scope_spans:
                received += [ReceivedSpan(s.name, s.span_id, s.parent_span_id, _attributes(s.attributes),
                                          [(e.name, _attributes(e.attributes)) for e in s.events], s.status.code,
                                          service) for s in scope.spans]
        with self.server.lock:
            self.server.spans += received
            self.server.paths.append(self.path)
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextlib.contextmanager
def otlp_receiver() -> Iterator[tuple[Served, OtlpServer]]:
    server = OtlpServer()
    with serve_in_thread(server) as served:
        yield served, server
