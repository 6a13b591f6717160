"""Processes of the tests: a private ``redis-server``, ``farm worker`` subprocesses, ``farm`` commands.

``tests/conftest.py`` hands them out as fixtures (``redis_factory``, ``farm_worker``, ``farm_cli``);
tests that need the classes themselves import them from here.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import ROOT, stop_process

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

    @contextmanager
    def started(self, *args: str, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
        """``popen``, the process killed and reaped on the way out if it still runs: a test that
        fails before its ``communicate`` leaves no ``farm`` command behind."""
        process = self.popen(*args, env=env)
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
