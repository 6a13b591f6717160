"""Real HTTP servers for tests, on free 127.0.0.1 ports.

Two ways to run a server:

- in a thread of the test process (``serve_in_thread``): fast, and the test can read the
  server object (``served.server.hits``, ``served.server.requests``);
- as a subprocess (``serve_subprocess``): for peers in other processes or a server that must
  be killed; ``served.hits(key)`` asks its ``GET /stats`` either way.

The bundled examples (``examples/servers/*.py``) are loaded by file path, so ``examples`` need
not be a package::

    with openai_server(key="sk-test") as served:      # served.url == "http://127.0.0.1:PORT"
        ...
    with json_agent_server() as served:
        url = served.url + "/echo"
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import HTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_SERVERS = ROOT / "examples" / "servers"
HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (bind to port 0, read it, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, *, timeout: float = 30.0, process: subprocess.Popen[Any] | None = None) -> None:
    """Wait until something accepts connections on 127.0.0.1:port; fail if the process exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server process exited with {process.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=0.5):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {HOST}:{port} after {timeout}s")


def load_example(name: str) -> ModuleType:
    """Import ``examples/servers/<name>.py`` by path (cached)."""
    module_name = f"_farm_example_servers.{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    if str(EXAMPLE_SERVERS) not in sys.path:  # the servers import their sibling ``_common``
        sys.path.insert(0, str(EXAMPLE_SERVERS))
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLE_SERVERS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Served:
    """A running server: its base URL, and the server object or the process behind it."""

    url: str
    port: int
    server: Any = None
    """The ``http.server`` instance when served in a thread, else None."""
    process: subprocess.Popen[Any] | None = None
    thread: threading.Thread | None = field(default=None, repr=False)
    key: str | None = None
    """The server's ``--key``: ``GET /stats`` asks with it."""

    def stats(self) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        request = urllib.request.Request(f"{self.url}/stats", headers=headers)
        with urllib.request.urlopen(request, timeout=10) as answer:
            return dict(json.load(answer))

    def hits(self, key: str) -> int:
        """How many requests the server saw for this fault key (see the example servers)."""
        if self.server is not None:
            with self.server.lock:
                return int(self.server.hits[key])
        return int(self.stats()["hits"].get(key, 0))

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        if self.thread is not None:
            self.thread.join(timeout=10)
        if self.process is not None:
            stop_process(self.process)


def stop_process(process: subprocess.Popen[Any], grace: float = 5.0) -> None:
    """Terminate, then kill after ``grace`` seconds."""
    stop_processes([process], grace)


def stop_processes(processes: list[subprocess.Popen[Any]], grace: float = 5.0) -> None:
    """``stop_process`` for several at once: each is told to stop before any is waited for, so their
    graceful ends (a Celery worker's warm shutdown finishing its tasks) overlap; each still gets
    ``grace`` seconds from its own SIGTERM before it is killed."""
    running = [process for process in processes if process.poll() is None]
    for process in running:
        process.terminate()
    deadline = time.monotonic() + grace
    for process in running:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace)


@contextlib.contextmanager
def serve_in_thread(server: HTTPServer) -> Iterator[Served]:
    """Serve an already bound ``http.server`` instance in a daemon thread until the block ends."""
    port = int(server.server_address[1])
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"test-server-{port}", daemon=True
    )
    thread.start()
    served = Served(url=f"http://{HOST}:{port}", port=port, server=server, thread=thread)
    try:
        yield served
    finally:
        served.close()


@contextlib.contextmanager
def serve_subprocess(
    argv: Sequence[str], port: int, *, env: dict[str, str] | None = None, timeout: float = 30.0
) -> Iterator[Served]:
    """Run ``argv`` (which must listen on ``port``), wait until it listens, stop it at the end."""
    process = subprocess.Popen(list(argv), env=env, stdout=subprocess.DEVNULL)
    served = Served(url=f"http://{HOST}:{port}", port=port, process=process)
    try:
        wait_for_port(port, timeout=timeout, process=process)
        yield served
    finally:
        served.close()


@contextlib.contextmanager
def openai_server(*, key: str | None = None, separate_process: bool = False, serve_model: str | None = None,
                  system_fingerprint: str | None = None) -> Iterator[Served]:
    """The example OpenAI-compatible server (``examples/servers/openai_server.py``); ``serve_model``
    and ``system_fingerprint`` are its ``--serve-model`` and ``--system-fingerprint``."""
    if separate_process:
        port = free_port()
        argv = [sys.executable, str(EXAMPLE_SERVERS / "openai_server.py"), "--port", str(port)]
        argv += ["--key", key] if key else []
        argv += ["--serve-model", serve_model] if serve_model else []
        argv += ["--system-fingerprint", system_fingerprint] if system_fingerprint else []
        with serve_subprocess(argv, port) as served:
            served.key = key
            yield served
        return
    module = load_example("openai_server")
    server = module.ChatServer((HOST, 0), key=key, serve_model=serve_model, system_fingerprint=system_fingerprint)
    with serve_in_thread(server) as served:
        served.key = key
        yield served


@contextlib.contextmanager
def json_agent_server(*, separate_process: bool = False) -> Iterator[Served]:
    """The example agent speaking the farm's HTTP JSON protocol (``json_agent_server.py``)."""
    if separate_process:
        port = free_port()
        argv = [sys.executable, str(EXAMPLE_SERVERS / "json_agent_server.py"), "--port", str(port)]
        with serve_subprocess(argv, port) as served:
            yield served
        return
    module = load_example("json_agent_server")
    with serve_in_thread(module.AgentServer((HOST, 0))) as served:
        yield served


def open_sessions(agent: Any) -> int:
    """How many open HTTP sessions (one per event loop) an HTTP adapter's transport holds."""
    return sum(not session.closed for session in agent.transport._sessions.values())


def agent_request(
    messages: list[dict[str, Any]] | str,
    *,
    sly_data: dict[str, Any] | None = None,
    timeout_s: float | None = None,
    conversation: Any = None,
    **context: Any,
) -> Any:
    """An ``AgentRequest`` for one turn (a string is one user message), for adapter tests."""
    from farm.agents.base import AgentContext, AgentRequest, Conversation

    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    context.setdefault("chat_id", "chat-test")
    return AgentRequest(
        messages=messages,
        new_messages=messages[-1:],
        sly_data=sly_data,
        timeout_s=timeout_s,
        context=AgentContext(sly_data=sly_data, **context),
        conversation=conversation or Conversation(chat_id=context["chat_id"]),
    )
