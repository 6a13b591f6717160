"""Shared fixtures: a private Redis server and real ``farm worker`` processes (the classes behind them:
``tests/support/processes.py``; helper modules: ``tests/support/``).

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
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import FarmCli, RedisServer, WorkerProcess, farm_env
from tests.support.servers import ROOT, free_port, stop_processes

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


LANE_MARKS = ("slow", "redis", "browser")
"""The marks the fast lane leaves out."""
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec"})
"""Audit events (PEP 578) of a process start: subprocess, multiprocessing's fork, a spawn."""
_started: list[str] | None = None  # what the running fast-lane test started; None outside such a test


FARMS_OWN_COMMANDS = frozenset({"git"})
"""Programs the farm itself runs in an in-process sweep, for milliseconds: ``git rev-parse HEAD``
(the agent's commit, ``farm.agents.repo_commit``). They leave a test in the fast lane."""


def _note_process(event: str, args: tuple[Any, ...]) -> None:
    if _started is None or event not in PROCESS_EVENTS:
        return
    if event == "subprocess.Popen" and Path(str(args[0])).name in FARMS_OWN_COMMANDS:
        return
    _started.append(f"{event} {str(args[:2])[:160]}")


sys.addaudithook(_note_process)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Watch a fast-lane test from its fixtures' setup (module-scoped servers included) on."""
    global _started
    _started = None if any(item.get_closest_marker(mark) for mark in LANE_MARKS) else []
    return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> None:
    """A process fixture set up for a fast-lane test counts as a start, even when the session's
    Redis is already up or the fixture is asked for by name (``request.getfixturevalue``)."""
    if _started is not None and fixturedef.argname in PROCESS_FIXTURES:
        _started.append(f"the {fixturedef.argname} fixture")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A fast-lane test that started a process fails (an error at teardown, naming it): the marks
    below see a module's own words, not what its helpers start, and the fast lane must start none."""
    global _started
    try:
        return (yield)
    finally:
        started, _started = _started, None
        if started:
            pytest.fail(f"{item.nodeid} starts a process but is not marked slow: {started[0]} "
                        f"({len(started)} in all); mark it, or its module, slow", pytrace=False)


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
