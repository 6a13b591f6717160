"""The neuro-san adapter against the genuine neuro-san server, the reference peer (Appendix A).

neuro-san is an optional peer: it needs Python ≥ 3.12 and is not a dependency of the farm.
These tests run when ``FARM_NEURO_SAN_PYTHON`` names a Python with ``neuro-san`` installed, or
when ``/tmp/ns-venv/bin/python`` is one; otherwise they are skipped. To set one up::

    ~/.pyenv/versions/3.12.1/bin/python -m venv /tmp/ns-venv
    /tmp/ns-venv/bin/pip install -c tests/neuro_san_fixture/constraints.txt neuro-san==0.7.15

(``.ci/run`` does this; 0.6.98 passes the same tests.)

The server runs offline: the agent networks in ``tests/neuro_san_fixture/registries`` use the
farm's example OpenAI-compatible server (which reports token usage) as their LLM, and
``tests/neuro_san_fixture/launch.py`` binds the server to 127.0.0.1 (neuro-san has no option
for the address; the launcher patches Tornado's socket binding).

What the genuine server does, observed here (0.6.98), beyond SPEC Appendix A:

- Message type numbers (chat.proto): UNKNOWN 0, SYSTEM 1, HUMAN 2, AI 4, AGENT 100,
  AGENT_FRAMEWORK 101, AGENT_TOOL_RESULT 103, AGENT_PROGRESS 104.
- MINIMAL (the default) sends one final AGENT_FRAMEWORK line with text, chat_context and
  sly_data; tool calls and token usage only come with MAXIMAL, whose lines also echo the
  request under a top-level ``request`` key.
- An agent failure is still HTTP 200: ``Retrying: …`` lines (with ``chat_context: {}``), then
  the final text ``Error from <agent>: …``. Handler errors are a bare ``{"error": …}`` without
  a newline; an unknown agent is 404 with an empty HTML body.
- Metadata headers are dropped unless listed in ``AGENT_FORWARDED_REQUEST_METADATA`` (default
  ``request_id user_id``).
- A client hang-up is noticed only at the server's next write (heartbeats with
  ``AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS``); a running LLM call is not
  cancelled before its next message.
- ``structure_formats: json``: the final text is what lies outside the JSON; the AI message
  before it carries the full text and no structure.
- ``AGENT_TOOL_PATH`` works only when ``PYTHONPATH`` holds a parent of it. Startup takes ~8 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from farm.agents.base import AgentContext, AgentRequest, Conversation
from farm.agents.neuro_san import CHAT_CONTEXT_STATE, NeuroSanAgent, create_neuro_san_agent
from farm.errors import AgentError
from farm.models import Reply
from tests.support.servers import HOST, free_port, openai_server, stop_process, wait_for_port

FIXTURE = Path(__file__).resolve().parents[1] / "neuro_san_fixture"
DEFAULT_PYTHON = "/tmp/ns-venv/bin/python"
AGENTS = {"echo", "deep/echo", "multiply", "nerd", "broken", "slow", "team"}

pytestmark = pytest.mark.slow


def neuro_san_python() -> str:
    """The peer's interpreter, or skip: absent is fine, named but broken is a failure."""
    named = os.environ.get("FARM_NEURO_SAN_PYTHON")
    python = named or DEFAULT_PYTHON
    if not Path(python).exists():
        if named:
            pytest.fail(f"FARM_NEURO_SAN_PYTHON={python}: no such file")
        why = os.environ.get("FARM_NEURO_SAN_MISSING") or (  # .ci/run says why it could not build the venv
            f"it needs Python 3.12 (pyenv's 3.12.1, which .ci/run builds its venv from); set FARM_NEURO_SAN_PYTHON "
            f"or create {DEFAULT_PYTHON}")
        pytest.skip(f"genuine neuro-san not installed: {why}")
    probe = subprocess.run([python, "-c", "import neuro_san"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        if named:
            pytest.fail(f"FARM_NEURO_SAN_PYTHON={python} cannot import neuro_san: {probe.stderr[-500:]}")
        pytest.skip(f"{python} cannot import neuro_san")
    return python


@dataclass
class Genuine:
    url: str
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Genuine]:
    python = neuro_san_python()
    log = tmp_path_factory.mktemp("neuro-san") / "server.log"
    with openai_server() as llm:
        port = free_port()
        env = server_env(llm.url)
        with log.open("wb") as out:
            process = subprocess.Popen(
                [python, str(FIXTURE / "launch.py"), "--http_port", str(port)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=FIXTURE,
            )
        try:
            wait_for_port(port, timeout=180, process=process)
            wait_for_agents(f"http://{HOST}:{port}")
            yield Genuine(f"http://{HOST}:{port}", log)
        finally:
            stop_process(process)


def server_env(llm_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    env.update(
        AGENT_MANIFEST_FILE=str(FIXTURE / "registries" / "manifest.hocon"),
        AGENT_TOOL_PATH=str(FIXTURE / "coded_tools"),
        PYTHONPATH=str(FIXTURE),  # neuro-san resolves AGENT_TOOL_PATH against PYTHONPATH
        AGENT_HEALTH_PROBE_PORT="0",  # no second listener
        AGENT_MCP_ENABLE="true",  # MCP at /mcp (on by default in 0.6.98; older docs say opt-in): explicit
        AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS="1",  # heartbeats notice a gone client
        AGENT_FORWARDED_REQUEST_METADATA="request_id user_id",
        OPENAI_API_BASE=f"{llm_url}/v1",
        OPENAI_API_KEY="sk-test",
        NO_PROXY="127.0.0.1,localhost",
    )
    return env


def wait_for_agents(url: str, timeout: float = 60.0) -> None:
    """The port opens before the networks are loaded: wait until all are listed."""
    deadline = time.monotonic() + timeout
    listed: set[str] = set()
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/api/v1/list", timeout=5) as answer:
                listed = {a["agent_name"] for a in json.load(answer)["agents"]}
        except (OSError, urllib.error.URLError, ValueError, KeyError):
            listed = set()
        if listed >= AGENTS:
            return
        time.sleep(0.2)
    raise TimeoutError(f"neuro-san lists {sorted(listed)}, expected {sorted(AGENTS)}")


def request(text: str, conversation: Conversation | None = None, **fields: Any) -> AgentRequest:
    message = {"role": "user", "content": text}
    metadata = fields.pop("metadata", None)
    return AgentRequest(
        messages=[message],
        new_messages=[message],
        timeout_s=fields.pop("timeout_s", 60.0),
        context=AgentContext(chat_id="genuine", metadata=metadata),
        conversation=conversation or Conversation(chat_id="genuine"),
        **fields,
    )


def converse(agent: NeuroSanAgent, *requests: AgentRequest) -> list[Reply]:
    async def go() -> list[Reply]:
        try:
            return [await agent.respond(r) for r in requests]
        finally:
            await agent.aclose()

    return asyncio.run(go())


def history(conversation: Conversation) -> list[tuple[str, str]]:
    messages = conversation.state[CHAT_CONTEXT_STATE]["chat_histories"][0]["messages"]
    return [(m["type"], m["text"]) for m in messages]


def test_chat_context_round_trip(genuine: Genuine) -> None:
    conversation = Conversation(chat_id="c")
    agent = create_neuro_san_agent(genuine.url, "echo")
    first, second = converse(agent, request("first words", conversation), request("second words", conversation))
    assert (first.text, second.text) == ("first words", "second words")
    assert history(conversation) == [
        ("HUMAN", "first words"),
        ("AI", "first words"),
        ("HUMAN", "second words"),
        ("AI", "second words"),
    ]
    fresh = Conversation(chat_id="d")
    converse(create_neuro_san_agent(genuine.url, "deep/echo"), request("alone", fresh))
    assert history(fresh) == [("HUMAN", "alone"), ("AI", "alone")]


def test_sly_data_tool_calls_and_usage(genuine: Genuine) -> None:
    sly_data = {"x": 6, "y": 7, "secret": "kept on the server"}
    turn = request("please calc it", sly_data=sly_data, chat_filter="MAXIMAL", metadata={"user_id": "farm-ann"})
    reply = converse(create_neuro_san_agent(genuine.url, "multiply"), turn)[0]
    assert reply.text == "tool said: product is 42"
    assert reply.sly_data == {"equals": 42}  # only the keys the network allows upstream
    assert [(c.name, c.result, c.error) for c in reply.tool_calls] == [("calc", "product is 42", None)]
    assert reply.usage is not None and reply.usage["total_tokens"] > 0
    assert '"user_id": "farm-ann"' in genuine.log_text()  # the header arrived as metadata


def test_calls_below_the_front_man_are_recorded_in_call_order(genuine: Genuine) -> None:
    """SPEC 21: the boss calls the clerk (an agent), which calls calc (a CodedTool); the clerk's
    call comes with origin [boss, clerk], calc's own result with [boss, clerk, calc]."""
    turn = request("please ask the clerk to calc it", sly_data={"x": 6, "y": 7}, chat_filter="MAXIMAL")
    reply = converse(create_neuro_san_agent(genuine.url, "team"), turn)[0]
    assert reply.text == "tool said: tool said: product is 42"
    assert [(c.name, c.result, c.error) for c in reply.tool_calls] == [
        ("clerk", "tool said: product is 42", None), ("calc", "product is 42", None)]
    assert reply.tool_calls[0].arguments == {"input": "please ask the clerk to calc it"}


def test_a_trajectory_check_on_the_genuine_server(genuine: Genuine, tmp_path: Path, farm_cli: Any) -> None:
    """End to end: no chat_filter in the case; its trajectory check makes the farm ask MAXIMAL."""
    suite = tmp_path / "team.hocon"
    suite.write_text(json.dumps({"agent": "team", "interactions": [{
        "text": "please ask the clerk to calc it", "sly_data": {"x": 6, "y": 7},
        "response": {"trajectory": {"tools": ["clerk", "calc"], "match": "strict"}, "not_tool_called": "boss"}}]}))
    done = farm_cli.run("test", "-i", str(suite), "--server", genuine.url, "--runs", "2", "--no-progress",
                        "--no-history", "-o", str(tmp_path / "r.json"), local=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (case,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert case["trajectories"] == [{"path": ["clerk", "calc"], "count": 2, "share": 1.0, "passed": 2}]


def test_a_failing_tool_is_recorded(genuine: Genuine) -> None:
    turn = request("please calc it", chat_filter="MAXIMAL")  # no sly_data: the tool raises
    reply = converse(create_neuro_san_agent(genuine.url, "multiply"), turn)[0]
    (call,) = reply.tool_calls
    assert call.name == "calc" and call.error == "Error: x and y are required in sly_data"


def test_structure_formats_json(genuine: Genuine) -> None:
    turn = request('{"answer": "The Beatles", "running_cost": 3.0}')
    reply = converse(create_neuro_san_agent(genuine.url, "nerd"), turn)[0]
    assert reply.text == ""
    assert reply.structure == {"answer": "The Beatles", "running_cost": 3.0}


def test_errors(genuine: Genuine) -> None:
    with pytest.raises(AgentError, match="Error from broken: Agent stopped due to exception"):
        converse(create_neuro_san_agent(genuine.url, "broken"), request("hello"))
    with pytest.raises(AgentError, match=r"unknown agent 'nope' on server .*\(it serves: .*echo"):
        converse(create_neuro_san_agent(genuine.url, "nope"), request("hello"))


def test_timeout_closes_the_connection(genuine: Genuine) -> None:
    with pytest.raises(TimeoutError, match="no final answer within 1s"):
        converse(create_neuro_san_agent(genuine.url, "slow"), request("hurry", timeout_s=1.0))
    deadline = time.monotonic() + 30
    while "client closed connection" not in genuine.log_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "client closed connection" in genuine.log_text()


def test_the_reply_names_the_server_s_neuro_san_version(genuine: Genuine) -> None:
    """SPEC 25: ``served.server_version`` is what the server's health check says (``versions``)."""
    asked = "import importlib.metadata as m; print(m.version('neuro-san'))"
    installed = subprocess.run([neuro_san_python(), "-c", asked], capture_output=True, text=True, timeout=120,
                               check=True).stdout.strip()
    agent = create_neuro_san_agent(genuine.url, "echo")
    first, second = converse(agent, request("one"), request("two"))
    assert first.served is not None and first.served.server_version == installed
    assert second.served == first.served  # asked once, kept
