"""Shared fixtures: a private Redis server and real ``farm worker`` processes.

``redis_server`` starts ``redis-server`` on a free 127.0.0.1 port for the session (no
persistence); ``FARM_TEST_REDIS_URL`` points the tests at an existing server instead. Without a
``redis-server`` binary the Redis tests skip, except under CI (env ``CI`` set), where they fail:
CI must run them (dramatiq's rule). ``redis_client`` empties the database before and after each
test. ``farm_worker`` starts real ``python -m farm worker`` subprocesses and stops them at the end;
``redis_factory`` starts extra servers (with persistence, restartable) for the fault tests.
``counting_agent`` (``tests/support/counting_agent.py``) makes ``py:`` agents that count their calls per
(case, run): the distributed tests assert with it that no run's agent is called twice.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import ROOT, free_port, stop_process, stop_processes

# PostgreSQL and SQLite databases of the history tests; the counting agent (calls per (case, run))
pytest_plugins = ["tests.support.history_fixtures", "tests.support.counting_agent"]

# The CLI's tables take COLUMNS as the terminal's width. pytest-xdist gives its workers COLUMNS=80
# and LINES=24, a developer's shell may export them: the tests see neither (those about widths set
# COLUMNS themselves), so they read the same everywhere.
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)

# A shell that starts the tests in the background (`.ci/run &`, a runner without job control)
# ignores SIGINT for them, and an ignored signal stays ignored across exec: the Ctrl-C tests' farm
# processes never saw theirs. A handler of our own is reset to the default in every child instead.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REDIS_BINARY = os.environ.get("FARM_TEST_REDIS_SERVER", "redis-server")
WORKER_READY_TIMEOUT_S = 60.0


def _redis_binary() -> str:
    found = shutil.which(REDIS_BINARY)
    if found:
        return found
    message = (f"no {REDIS_BINARY!r} on PATH: install it (apt-get install redis-server) or set FARM_TEST_REDIS_URL")
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _ping(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5).ping())
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False


@dataclass
class RedisServer:
    """A ``redis-server`` process of our own on 127.0.0.1; restartable on the same port and files."""

    port: int
    directory: Path
    persistent: bool = False
    process: subprocess.Popen[Any] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def argv(self) -> list[str]:
        argv = [_redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
                "--save", ""]
        if self.persistent:
            return [*argv, "--appendonly", "yes", "--appendfsync", "always"]
        return [*argv, "--appendonly", "no"]

    def start(self, timeout: float = 20.0) -> None:
        log = (self.directory / "redis.log").open("ab")
        self.process = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not _ping(self.url):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on port {self.port} did not start (see {self.directory}/redis.log)")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no goodbye, as a crashed or rescheduled server."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)


@pytest.fixture(autouse=True)
def farm_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's FARM_DATA_DIR (run journals, history) is a temporary one, never the user's."""
    path = tmp_path_factory.mktemp("farm-data")
    monkeypatch.setenv("FARM_DATA_DIR", str(path))
    return path


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a Redis server for the session: our own, or FARM_TEST_REDIS_URL."""
    external = os.environ.get("FARM_TEST_REDIS_URL")
    if external:
        yield external
        return
    server = RedisServer(free_port(), tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def redis_client(redis_server: str) -> Iterator[Any]:
    """A client on the session's server, the database emptied before and after the test."""
    import redis

    client = redis.Redis.from_url(redis_server, decode_responses=True)
    client.flushdb()
    try:
        yield client
    finally:
        client.flushdb()
        client.close()


@pytest.fixture
def redis_factory(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    """Start extra private Redis servers (``persistent=True``: append-only file, fsync always)."""
    servers: list[RedisServer] = []

    def create(*, persistent: bool = False) -> RedisServer:
        directory = tmp_path / f"redis-{len(servers)}"
        directory.mkdir()
        server = RedisServer(free_port(), directory, persistent=persistent)
        server.start()
        servers.append(server)
        return server

    try:
        yield create
    finally:
        for server in servers:
            server.stop()


@dataclass
class WorkerProcess:
    """A ``farm worker`` subprocess and its log."""

    process: subprocess.Popen[Any]
    log: Path
    name: str
    env: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_ready(self, timeout: float = WORKER_READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while " ready." not in self.text():
            if self.process.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited with {self.process.returncode}:\n{self.text()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"worker {self.name} not ready after {timeout}s:\n{self.text()[-3000:]}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL, as the OOM killer or a lost machine would."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        stop_process(self.process, grace=10.0)


def farm_env(broker_url: str, **extra: str) -> dict[str, str]:
    """Environment of farm subprocesses: this interpreter's, the broker, the repo on the path."""
    env = {k: v for k, v in os.environ.items() if k == "FARM_DATA_DIR" or not k.startswith(("FARM_", "FLOWER_"))}
    env.update({"FARM_BROKER_URL": broker_url, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


@pytest.fixture
def farm_worker(redis_server: str, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start real ``python -m farm worker`` processes (ready on return); all stopped at the end."""
    started: list[WorkerProcess] = []

    def create(*args: str, broker: str | None = None, queue: str | None = "farm", concurrency: int = 8,
               env: dict[str, str] | None = None, wait: bool = True, supervised: bool = False,
               cwd: Path | None = None) -> WorkerProcess:
        name = f"test{len(started)}-{os.getpid()}"
        log = tmp_path / f"worker-{name}.log"
        full_env = farm_env(broker or redis_server, **(env or {}))
        queues = ["-Q", queue] if queue is not None else []  # None: the worker's own default (FARM_QUEUE)
        # one process (``farm worker``'s default is one per core): the suite stays light; unsupervised,
        # SIGKILL/SIGSTOP of ``process`` hit the Celery worker itself; a later ``--processes N`` in args wins
        supervision = ["--supervise"] if supervised else ["--no-supervise"]
        argv = [sys.executable, "-m", "farm", "worker", "--processes", "1", *supervision, *queues, "-c",
                str(concurrency), "-n", f"{name}@%h", "-l", "INFO", "--without-mingle", "--without-gossip", *args]
        with log.open("wb") as out:
            process = subprocess.Popen(argv, cwd=cwd or ROOT, env=full_env, stdout=out, stderr=subprocess.STDOUT)
        worker = WorkerProcess(process, log, name, full_env)
        started.append(worker)
        if wait:
            worker.wait_ready()
        return worker

    try:
        yield create
    finally:  # all at once: each worker's warm shutdown finishes its tasks, and they need not queue
        stop_processes([worker.process for worker in started], grace=10.0)


@dataclass
class FarmCli:
    """Runs ``python -m farm …`` in a subprocess against a broker, from the repository root."""

    broker: str

    def env(self, *, local: bool = False, **extra: str) -> dict[str, str]:
        env = farm_env(self.broker, **extra)
        if local:  # in-process: no FARM_BROKER_URL for `farm test` to pick up
            env.pop("FARM_BROKER_URL")
        return env

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 120.0, local: bool = False
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "farm", *args], cwd=ROOT, env=self.env(local=local, **(env or {})),
                              capture_output=True, text=True, timeout=timeout, check=False)

    def popen(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "farm", *args], cwd=ROOT, env=self.env(**(env or {})),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def farm_cli(redis_server: str) -> FarmCli:
    """``farm`` subprocesses with FARM_BROKER_URL set to the session's Redis."""
    return FarmCli(redis_server)


PROCESS_FIXTURES = frozenset({"redis_server", "redis_client", "redis_factory", "farm_worker", "farm_cli"})
"""Fixtures that start redis-server or farm processes: their tests are ``redis`` and ``slow``."""
_STARTS_PROCESSES: dict[str, bool] = {}


def _module_starts_processes(path: Path) -> bool:
    """A test module that runs subprocesses (farm commands, servers, workers) or drives Chromium."""
    key = str(path)
    if key not in _STARTS_PROCESSES:
        text = path.read_text(encoding="utf-8", errors="replace")
        _STARTS_PROCESSES[key] = any(word in text for word in ("subprocess", "Popen", "run_farm", "farm_cli"))
    return _STARTS_PROCESSES[key]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark what the fast lane (``pytest -m "not slow and not redis and not browser"``, README) leaves
    out: tests using a process fixture (redis, slow), tests of modules that start processes (slow),
    and tests that drive Chromium (browser); the marks written by hand stay."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & PROCESS_FIXTURES:
            item.add_marker(pytest.mark.redis)
            item.add_marker(pytest.mark.slow)
        elif _module_starts_processes(item.path):
            item.add_marker(pytest.mark.slow)
        if names & {"browser", "chromium"}:  # the modules' headless Chromium fixtures
            item.add_marker(pytest.mark.browser)
