"""Agent references, the adapter registry and the agent pool's hooks (SPEC 5.1, 5.2)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from farm.agents.base import Agent, AgentRequest
from farm.agents.command import CommandAgent
from farm.agents.hooks import AgentHooks
from farm.agents.http import HttpAgent
from farm.agents.neuro_san import NeuroSanAgent
from farm.agents.options import AgentOptions
from farm.agents.python import PythonAgent
from farm.agents.ref import AgentRef
from farm.agents.registry import ADAPTERS
from farm.agents.resolve import AgentPool, create_agent, parse_reference
from farm.agents.urls import neuro_san_server, parse_neuro_san_url
from farm.errors import AgentResolutionError
from farm.models import Case, Message, Reply, RunStatus, Turn
from farm.run.environment import RunEnvironment
from farm.run.execute import execute_run

HERE = Path(__file__).resolve().parents[1]
PY_AGENT = HERE / "agents" / "conformance.py"


@pytest.fixture
def options(tmp_path: Path) -> AgentOptions:
    return AgentOptions.from_env(tmp_path, agents_root=str(tmp_path / "assistants"),
                                 connectors_root=str(tmp_path / "connectors"))


def manifest(options: AgentOptions, name: str, body: dict[str, Any]) -> AgentRef:
    agent_dir = Path(options.agents_root) / name
    agent_dir.mkdir(parents=True)
    (agent_dir / "package.yao").write_text(json.dumps(body))
    return parse_reference(name, options)


# ------------------------------------------------------------------------- neuro-san addresses


def test_a_neuro_san_reference_without_a_port_connects_to_8080(options: AgentOptions) -> None:
    # Regression: -n neuro-san://host/agent connected to port 80 (the parser adding 8080 was dead code).
    agent = create_agent(parse_reference("neuro-san://127.0.0.1/echo", options), options)
    assert isinstance(agent, NeuroSanAgent)
    assert agent.url == "http://127.0.0.1:8080/api/v1/echo/streaming_chat"
    assert agent.id == "neuro-san://127.0.0.1:8080/echo"


@pytest.mark.parametrize(
    ("ref", "server", "agent"),
    [
        ("neuro-san://localhost:8080/hello_world", "http://localhost:8080", "hello_world"),
        ("neuro-san://10.0.0.5:9000/deep/math_guy", "http://10.0.0.5:9000", "deep/math_guy"),
        ("neuro-san://ns.example/echo/", "http://ns.example:8080", "echo"),
        ("neuro-san://[::1]/echo", "http://[::1]:8080", "echo"),
        ("neuro-san://[::1]:9/echo", "http://[::1]:9", "echo"),
    ],
)
def test_neuro_san_references(options: AgentOptions, ref: str, server: str, agent: str) -> None:
    assert parse_neuro_san_url(ref) == (server, agent)
    parsed = parse_reference(ref, options)
    assert (parsed.kind, parsed.target, parsed.name) == ("neuro-san", server, agent)


@pytest.mark.parametrize("ref", ["neuro-san://host:8080", "neuro-san:///echo", "neuro-san://"])
def test_bad_neuro_san_references_are_refused(options: AgentOptions, ref: str) -> None:
    with pytest.raises(AgentResolutionError, match="neuro-san://host:port/agent"):
        parse_reference(ref, options)


@pytest.mark.parametrize(
    ("server", "url"),
    [
        ("localhost", "http://localhost:8080"),
        ("127.0.0.1:9000/", "http://127.0.0.1:9000"),
        ("neuro-san://ns.example", "http://ns.example:8080"),
        ("http://ns.example", "http://ns.example"),  # an http URL keeps HTTP's own default port
        ("https://ns.example/prefix/", "https://ns.example/prefix"),
        ("ns.example/prefix", "http://ns.example:8080/prefix"),
    ],
)
def test_server_addresses(server: str, url: str) -> None:
    assert neuro_san_server(server) == url


def test_a_server_of_another_scheme_is_refused() -> None:
    with pytest.raises(AgentResolutionError, match="expected http://host:port"):
        neuro_san_server("ftp://ns.example")


@pytest.mark.parametrize(
    ("ref", "problem"),
    [
        ("http://[::1/agent", "Invalid IPv6 URL"),
        ("https://example.com:99999/agent", "out of range"),
        ("http://example.com:port/agent", "could not be cast to integer"),
        ("neuro-san://[::1/echo", "Invalid IPv6 URL"),
        ("neuro-san://example.com:99999/echo", "out of range"),
    ],
)
def test_a_url_that_does_not_parse_is_refused_naming_it(options: AgentOptions, ref: str, problem: str) -> None:
    # bad input (exit 2) with the reference and urllib's reason, not a traceback (exit 3)
    with pytest.raises(AgentResolutionError, match=problem) as caught:
        parse_reference(ref, options)
    assert repr(ref) in caught.value.message


# ------------------------------------------------------------------------------------ registry


def test_every_reference_kind_reaches_its_adapter(options: AgentOptions) -> None:
    built = {
        ref: create_agent(parse_reference(ref, options), options)
        for ref in (f"py:{PY_AGENT}:memory", "http://127.0.0.1:1/x", "neuro-san://h/a", "cmd:python3")
    }
    assert [type(a) for a in built.values()] == [PythonAgent, HttpAgent, NeuroSanAgent, CommandAgent]
    assert [a.id for a in built.values()] == [f"py:{PY_AGENT}:memory", "http://127.0.0.1:1/x",
                                               "neuro-san://h:8080/a", "cmd:python3"]


def test_manifests_name_their_adapter_by_type(options: AgentOptions) -> None:
    ref = manifest(options, "web", {"type": "http", "url": "http://127.0.0.1:1/", "timeout": "2s"})
    agent = create_agent(ref, options)
    assert isinstance(agent, HttpAgent) and agent.id == "web" and agent.timeout_s == 2.0
    ref = manifest(options, "remote", {"type": "neuro-san", "agent": "echo"})
    remote = create_agent(ref, options)
    assert isinstance(remote, NeuroSanAgent) and remote.server == "http://localhost:8080" and remote.id == "remote"


def test_an_unknown_type_lists_the_known_ones(options: AgentOptions) -> None:
    ref = manifest(options, "odd", {"type": "grpc"})
    with pytest.raises(AgentResolutionError) as caught:
        create_agent(ref, options)
    assert caught.value.message.endswith(
        "package.yao: type: unknown agent type 'grpc' (expected one of: prompt, python, http, neuro-san, command)"
    )
    assert list(ADAPTERS) == ["prompt", "python", "http", "neuro-san", "command"]


@pytest.mark.parametrize(("kind", "field"), [("http", "url"), ("python", "entry"), ("command", "command"),
                                             ("neuro-san", "agent")])
def test_a_manifest_without_its_required_field(options: AgentOptions, kind: str, field: str) -> None:
    ref = manifest(options, f"no-{field}", {"type": kind})
    with pytest.raises(AgentResolutionError, match=rf"package\.yao: {field}: missing"):
        create_agent(ref, options)


# ------------------------------------------------------------------------------ the pool's hooks


class CountingAgent:
    """A caller-supplied wrapper at ``Agent.respond`` level (as record/replay would be)."""

    def __init__(self, inner: Agent, ref: AgentRef) -> None:
        self.inner, self.ref, self.id, self.calls = inner, ref, inner.id, 0

    async def respond(self, request: AgentRequest) -> Reply:
        self.calls += 1
        reply = await self.inner.respond(request)
        return reply.model_copy(update={"text": f"[wrapped] {reply.text}"})

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_the_pool_wraps_every_agent_it_builds(options: AgentOptions) -> None:
    ref = parse_reference(f"py:{PY_AGENT}:memory", options)
    pool = AgentPool(options, AgentHooks(wrap_agent=CountingAgent))
    agent = pool.get(ref)
    assert isinstance(agent, CountingAgent) and agent.ref == ref and pool.get(ref) is agent
    turns = [Turn(messages=[Message(role="user", content=t)]) for t in ("one", "two")]

    async def go() -> Any:
        try:
            return await execute_run(Case(id="w", format="yao", turns=turns), 1, agent, RunEnvironment())
        finally:
            await pool.aclose()

    result = asyncio.run(go())
    assert result.status is RunStatus.PASSED and agent.calls == 2
    assert result.output == "[wrapped] turn 2: two; previous: one"


def test_agents_judges_are_wrapped_too(options: AgentOptions) -> None:
    from farm.agents.judge import AgentJudge, create_judge_resolver

    manifest(options, "reviewer", {"type": "python", "entry": f"{PY_AGENT}:memory"})
    judge = create_judge_resolver(options, AgentHooks(wrap_agent=CountingAgent))("agents:reviewer")
    assert isinstance(judge, AgentJudge) and isinstance(judge.agent, CountingAgent)
    assert judge.agent.ref.kind == "manifest"
