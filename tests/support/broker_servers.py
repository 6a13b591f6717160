"""Real brokers for the broker and security tests: a RabbitMQ vhost of our own, a TLS Redis, an ACL Redis.

- ``rabbitmq_vhost()``: the RabbitMQ server on 127.0.0.1:5672 (guest/guest), a fresh vhost made
  with ``rabbitmqctl`` for one test and deleted after it; skipped, naming RabbitMQ, when the
  server or ``rabbitmqctl`` is missing.
- ``self_signed(directory)``: a CA and a server certificate for 127.0.0.1, made with the
  ``openssl`` command (skipped, naming openssl, without it).
- ``start_redis(directory, *args)``: a ``redis-server`` on a free port with extra arguments
  (``--tls-port``, ``--user``), stopped by the caller.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.servers import HOST, free_port, stop_process, wait_for_port

RABBITMQ_HOST, RABBITMQ_PORT = "127.0.0.1", 5672
RABBITMQ_USER = "guest"


def _reachable(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1.0):
        return True
    return False


def rabbitmqctl(*args: str, ctl: str = "rabbitmqctl") -> subprocess.CompletedProcess[str]:
    """``rabbitmqctl ARGS`` on the local server, its output captured (the caller reads the return code)."""
    return subprocess.run([ctl, *args], capture_output=True, text=True, timeout=60, check=False)


@contextlib.contextmanager
def rabbitmq_vhost() -> Iterator[str]:
    """An ``amqp://`` URL of a vhost of our own on the local RabbitMQ; the vhost is deleted after."""
    if not _reachable(RABBITMQ_HOST, RABBITMQ_PORT):
        pytest.skip(f"RabbitMQ: nothing listens on {RABBITMQ_HOST}:{RABBITMQ_PORT}")
    ctl = shutil.which("rabbitmqctl")
    if ctl is None:
        pytest.skip("RabbitMQ: no rabbitmqctl on PATH to create a vhost with")
    vhost = f"farm-test-{uuid.uuid4().hex[:12]}"
    made = rabbitmqctl("add_vhost", vhost, ctl=ctl)
    if made.returncode != 0:
        pytest.skip(f"RabbitMQ: rabbitmqctl add_vhost failed: {(made.stderr or made.stdout).strip()[:300]}")
    try:
        allowed = rabbitmqctl("set_permissions", "-p", vhost, RABBITMQ_USER, ".*", ".*", ".*", ctl=ctl)
        assert allowed.returncode == 0, allowed.stderr
        yield f"amqp://{RABBITMQ_USER}:guest@{RABBITMQ_HOST}:{RABBITMQ_PORT}/{quote(vhost, safe='')}"
    finally:
        rabbitmqctl("delete_vhost", vhost, ctl=ctl)


@dataclass(frozen=True)
class Certificates:
    ca: Path
    cert: Path
    key: Path


def self_signed(directory: Path) -> Certificates:
    """A throw-away CA and a server certificate it signed, for 127.0.0.1 and localhost."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl: no openssl command to make a self-signed certificate with")
    ca_key, ca, key, csr, cert = (directory / n for n in ("ca.key", "ca.pem", "server.key", "server.csr",
                                                          "server.pem"))
    ext = directory / "san.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n", encoding="utf-8")

    def run(*args: str | Path) -> None:
        done = subprocess.run([openssl, *map(str, args)], capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
        "-subj", "/CN=agent-farm test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2",
        "-extfile", ext)
    return Certificates(ca=ca, cert=cert, key=key)


@dataclass
class RedisProcess:
    port: int
    process: subprocess.Popen[Any]
    log: Path

    def stop(self) -> None:
        stop_process(self.process)


def start_redis(directory: Path, *args: str, port: int | None = None, listen_port: int | None = None
                ) -> RedisProcess:
    """``redis-server`` on 127.0.0.1 with ``args``; ``listen_port`` is the port to wait for (TLS)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server: not on PATH")
    port = free_port() if port is None else port
    log = directory / f"redis-{port}.log"
    argv = [binary, "--port", str(port), "--bind", HOST, "--dir", str(directory), "--save", "", "--appendonly", "no",
            *args]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_port(listen_port or port, timeout=20.0, process=process)
    except (RuntimeError, TimeoutError) as exc:
        stop_process(process)
        raise RuntimeError(f"redis-server {' '.join(args)}: {exc}\n{log.read_text(errors='replace')}") from exc
    return RedisProcess(port, process, log)


__all__ = ["Certificates", "RedisProcess", "rabbitmq_vhost", "self_signed", "start_redis"]
