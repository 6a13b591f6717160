"""The transport kit (farm/agents/transport.py) against real peers on 127.0.0.1: the limiter seam
every adapter's HTTP attempts go through, the fault mapping, TLS, streams and sessions."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import logging
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from farm.agents.base import Conversation
from farm.agents.connectors import estimate_tokens, load_connectors
from farm.agents.hooks import AgentHooks
from farm.agents.http import create_http_agent
from farm.agents.judge import create_judge_resolver
from farm.agents.limiter import NO_LIMITER, CallLease
from farm.agents.neuro_san import create_neuro_san_agent
from farm.agents.options import AgentOptions
from farm.agents.retry import TransientError
from farm.agents.transport import Transport, shared_ssl_context
from farm.errors import AgentError
from tests.support.servers import (
    HOST,
    ROOT,
    Served,
    agent_request,
    free_port,
    json_agent_server,
    load_example,
    open_sessions,
    openai_server,
    serve_in_thread,
)


@dataclasses.dataclass
class Lease:
    key: str
    tokens: int
    released: dict[str, Any] | None = None

    async def release(self, *, status: int | None, retry_after_s: float | None,
                      usage: dict[str, int] | None) -> None:
        assert self.released is None, "a lease is released once"
        self.released = {"status": status, "retry_after_s": retry_after_s, "usage": usage}


class RecordingLimiter:
    """A real ``CallLimiter``: admits every attempt (after ``gate``, when given) and records it."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.leases: list[Lease] = []
        self.gate = gate

    async def acquire(self, key: str, *, tokens: int = 0) -> CallLease:
        if self.gate is not None:
            await self.gate.wait()
        self.leases.append(Lease(key, tokens))
        return self.leases[-1]

    def told(self) -> list[tuple[str, int, dict[str, Any] | None]]:
        return [(lease.key, lease.tokens, lease.released) for lease in self.leases]


@pytest.fixture(scope="module")
def agent_server() -> Iterator[Served]:
    with json_agent_server() as served:
        yield served


@pytest.fixture(autouse=True)
def default_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FARM_RETRY_ATTEMPTS", raising=False)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def respond_once(agent: Any, request: Any) -> Any:
    try:
        return await agent.respond(request)
    finally:
        await agent.aclose()


# ------------------------------------------------------------------------------ the limiter seam


def test_every_attempt_of_an_http_agent_is_admitted_and_reported(agent_server: Served) -> None:
    limiter = RecordingLimiter()
    url = f"{agent_server.url}/flaky?status=429&n=1&retry_after=0&key={uuid.uuid4().hex}"
    agent = create_http_agent(url, limiter=limiter)
    reply = run(respond_once(agent, agent_request("two words")))
    assert reply.text == "two words"
    assert limiter.told() == [
        (url, 0, {"status": 429, "retry_after_s": 0.0, "usage": None}),
        (url, 0, {"status": 200, "retry_after_s": None, "usage": {"prompt_tokens": 2, "completion_tokens": 2}}),
    ]


def test_a_connection_fault_releases_without_a_status(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_RETRY_ATTEMPTS", "2")
    limiter = RecordingLimiter()
    agent = create_http_agent(f"http://{HOST}:{free_port()}/", agent_id="down", limiter=limiter)
    with pytest.raises(AgentError, match="connection failed"):
        run(respond_once(agent, agent_request("hi")))
    assert limiter.told() == [("down", 0, {"status": None, "retry_after_s": None, "usage": None})] * 2


def test_a_call_cut_off_by_its_deadline_releases_its_lease(agent_server: Served) -> None:
    limiter = RecordingLimiter()
    agent = create_http_agent(f"{agent_server.url}/slow?s=5", agent_id="slow", limiter=limiter)

    async def go() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(agent.respond(agent_request(uuid.uuid4().hex)), 0.3)
        await agent.aclose()

    run(go())
    assert limiter.told() == [("slow", 0, {"status": None, "retry_after_s": None, "usage": None})]


def test_no_request_leaves_before_the_limiter_admits_it(agent_server: Served) -> None:
    message = uuid.uuid4().hex

    async def go() -> str:
        limiter = RecordingLimiter(gate=asyncio.Event())
        agent = create_http_agent(f"{agent_server.url}/echo", limiter=limiter)
        call = asyncio.ensure_future(agent.respond(agent_request(message)))
        await asyncio.sleep(0.3)
        assert agent_server.hits(message) == 0 and not call.done()
        assert limiter.gate is not None
        limiter.gate.set()
        reply = await call
        await agent.aclose()
        return str(reply.text)

    assert run(go()) == message
    assert agent_server.hits(message) == 1


def test_connectors_are_keyed_by_id_with_a_token_estimate(tmp_path: Path) -> None:
    limiter = RecordingLimiter()
    with openai_server() as served:
        conn = tmp_path / "openai" / "gpt-4o.conn.yao"
        conn.parent.mkdir(parents=True)
        conn.write_text(json.dumps({"type": "openai", "options": {"model": "echo", "host": served.url,
                                                                    "max_tokens": 50}}))
        connector = load_connectors(tmp_path, limiter=limiter).get("openai.gpt-4o")
        messages = [{"role": "user", "content": "hello there, how are you today"}]

        async def go() -> Any:
            try:
                return await connector.chat(messages)
            finally:
                await connector.aclose()

        reply = run(go())
        assert served.server.requests[-1]["body"]["max_tokens"] == 50
    assert reply.text == "hello there, how are you today"
    ((key, tokens, released),) = limiter.told()
    assert (key, tokens) == ("openai.gpt-4o", estimate_tokens(messages) + 50)
    assert released is not None and released["status"] == 200 and released["usage"] == reply.usage
    assert estimate_tokens(messages) == len(messages[0]["content"]) // 4 + 1


def test_neuro_san_attempts_report_the_streams_token_accounting() -> None:
    limiter = RecordingLimiter()
    module = load_example("neuro_san_server")
    with serve_in_thread(module.NeuroSanServer((HOST, 0))) as served:
        agent = create_neuro_san_agent(served.url, "echo", agent_id="ns-echo", limiter=limiter)
        request = agent_request("one two")
        request.chat_filter = "MAXIMAL"
        reply = run(respond_once(agent, request))
    assert reply.usage == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7, "cost": 0.0}
    assert limiter.told() == [("ns-echo", 0, {"status": 200, "retry_after_s": None,
                                              "usage": {"prompt_tokens": 5, "completion_tokens": 2,
                                                        "total_tokens": 7}})]


def test_an_agents_judge_counts_under_its_own_name(tmp_path: Path, agent_server: Served) -> None:
    limiter = RecordingLimiter()
    reviewer = tmp_path / "assistants" / "reviewer"
    reviewer.mkdir(parents=True)
    (reviewer / "package.yao").write_text(json.dumps({"type": "http", "url": agent_server.url + "/echo"}))
    resolver = create_judge_resolver(AgentOptions.from_env(tmp_path), AgentHooks(limiter=limiter))

    async def go() -> Any:
        try:
            return await resolver("agents:reviewer").judge(criterion="c", actual="a", input="i")
        finally:
            await resolver.aclose()

    run(go())
    assert [key for key, _tokens, _released in limiter.told()] == ["agents:reviewer"]


def test_the_default_admits_at_once() -> None:
    async def go() -> None:
        lease = await NO_LIMITER.acquire("any", tokens=10)
        await lease.release(status=200, retry_after_s=None, usage={"total_tokens": 3})

    run(go())
    assert Transport().limiter is NO_LIMITER


# ---------------------------------------------------------------------------------------- faults


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a self-signed certificate")
    tmp = tmp_path_factory.mktemp("tls")
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    return cert, key


def test_an_untrusted_certificate_is_a_tls_failure_not_retried(self_signed: tuple[Path, Path]) -> None:
    module = load_example("json_agent_server")
    server = module.AgentServer((HOST, 0))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*self_signed)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    conversation = Conversation(chat_id="c")
    with serve_in_thread(server) as served:
        agent = create_http_agent(served.url.replace("http://", "https://") + "/echo")
        with pytest.raises(AgentError, match=r"TLS failure \(ClientConnectorCertificateError") as caught:
            run(respond_once(agent, agent_request("hi", conversation=conversation)))
    assert caught.value.retries == 0 == conversation.retries
    shared = shared_ssl_context()
    assert shared is shared_ssl_context() and shared.verify_mode is ssl.CERT_REQUIRED and shared.check_hostname
    assert shared.cert_store_stats()["x509_ca"] > 50  # certifi's bundle, loaded by the first TLS connection


def test_plain_http_sweeps_load_no_certificates(tmp_path: Path) -> None:
    """The shared context trusts certifi's bundle only from its first TLS connection: a process
    whose agents speak plain HTTP never loads a CA into it."""
    probe = """
import asyncio, sys
from farm.agents.transport import Transport, shared_ssl_context

async def main(url):
    transport = Transport()
    async with transport.attempt("k") as attempt:
        answer = await attempt.post_json(url, {"messages": []}, headers={}, timeout_s=5, what="probe")
    await transport.aclose()
    return answer.status

print(asyncio.run(main(sys.argv[1])), shared_ssl_context().cert_store_stats()["x509_ca"])
"""
    module = load_example("json_agent_server")
    server = module.AgentServer((HOST, 0))
    with serve_in_thread(server) as served:
        out = subprocess.run([sys.executable, "-c", probe, served.url + "/echo"], capture_output=True, text=True,
                             timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["200", "0"]


@pytest.fixture
def garbage_server() -> Iterator[tuple[str, list[int]]]:
    """Answers every connection with bytes that are not HTTP, then hangs up."""
    listener = socket.create_server((HOST, 0))
    accepted: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(1)
            with conn:
                conn.recv(65536)
                conn.sendall(b"NOT HTTP AT ALL\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://{HOST}:{listener.getsockname()[1]}/", accepted
    listener.close()
    thread.join(timeout=5)


def test_a_malformed_answer_is_a_lost_connection_and_retried(garbage_server: tuple[str, list[int]],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_RETRY_ATTEMPTS", "2")
    url, accepted = garbage_server
    with pytest.raises(AgentError, match="connection lost") as caught:
        run(respond_once(create_http_agent(url), agent_request("hi")))
    assert caught.value.retries == 1 and len(accepted) == 2


def test_statuses_map_to_the_farms_faults(agent_server: Served) -> None:
    async def post(path: str) -> Exception:
        transport = Transport()
        try:
            async with transport.attempt("k") as attempt:
                await attempt.post_json(agent_server.url + path, {"messages": []}, headers={}, timeout_s=5, what="t")
        except Exception as exc:
            return exc
        finally:
            await transport.aclose()
        raise AssertionError("no fault")

    key = uuid.uuid4().hex
    limited = run(post(f"/flaky?status=429&n=1&retry_after=date:30&key={key}"))
    assert isinstance(limited, TransientError) and limited.retry_after is not None
    assert 25 < limited.retry_after <= 30
    for status in (502, 503, 504):
        assert isinstance(run(post(f"/error?status={status}")), TransientError)
    for status in (400, 401, 404, 500):
        fault = run(post(f"/error?status={status}"))
        assert type(fault) is AgentError and f"t: HTTP {status}: " in fault.message


# --------------------------------------------------------------------------- streams and sessions


def test_a_stream_hands_out_long_lines_whole(agent_server: Served) -> None:
    long_text = "x" * 300_000  # over aiohttp's own readline limit

    async def go() -> list[str]:
        transport = Transport()
        body = {"messages": [{"role": "user", "content": long_text}]}
        try:
            async with (
                transport.attempt("k") as attempt,
                attempt.open_stream(agent_server.url + "/echo", body, headers={}, what="t") as stream,
            ):
                await stream.raise_for_status()
                return [line async for line in stream.lines()]
        finally:
            await transport.aclose()

    (line,) = run(go())
    assert json.loads(line)["text"] == long_text


def test_sessions_of_closed_loops_are_dropped_quietly(agent_server: Served, caplog: pytest.LogCaptureFixture) -> None:
    agent = create_http_agent(agent_server.url + "/echo")
    for i in range(2):  # two loops come and go without closing the agent
        assert run(agent.respond(agent_request(f"loop {i}"))).text == f"loop {i}"
    assert open_sessions(agent) == 2
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        run(agent.aclose())
        gc.collect()
    assert open_sessions(agent) == 0
    assert not [r for r in caplog.records if "Unclosed" in r.getMessage()]


def test_an_agent_dropped_with_its_loop_still_open_is_dropped_quietly(agent_server: Served,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    # A worker thread keeps its loop open and never closes its agents.
    loop = asyncio.new_event_loop()
    try:
        agent = create_http_agent(agent_server.url + "/echo")
        assert loop.run_until_complete(agent.respond(agent_request("kept open"))).text == "kept open"
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            del agent
            gc.collect()
    finally:
        loop.close()
    assert not [r for r in caplog.records if "Unclosed" in r.getMessage()]


def test_a_process_exiting_with_sessions_open_logs_nothing(agent_server: Served) -> None:
    script = (
        "import asyncio, threading\n"
        "from farm.agents.http import create_http_agent\n"
        "from tests.support.servers import agent_request\n"
        f"agent = create_http_agent({agent_server.url + '/echo'!r})\n"
        "def work():\n"
        "    loop = asyncio.new_event_loop()  # as a worker thread's: never closed\n"
        "    print(loop.run_until_complete(agent.respond(agent_request('from a thread'))).text)\n"
        "thread = threading.Thread(target=work)\n"
        "thread.start(); thread.join()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "from a thread"
    assert "Unclosed" not in done.stderr, done.stderr
