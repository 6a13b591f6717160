"""``connections: mcp`` against the genuine neuro-san server (issue 29), started with MCP enabled
explicitly (``AGENT_MCP_ENABLE=true``). The same HOCON cases run over ``[http, mcp]`` and give the
same verdicts per connection; what MCP cannot carry (the sly_data the agent returns) is skipped
with the reason; ``grpc`` is skipped naming the neuro-san version that dropped it.

Found in the server (0.6.98; 0.7.15 alike): each agent network is a tool of ``/mcp`` whose input
schema is the ChatRequest (``user_message``, ``sly_data``, ``chat_context``, ``chat_filter``),
so a conversation's context goes round as over HTTP; the result carries the text (HTML-escaped,
the structure appended as a fenced JSON block) and ``structuredContent`` ``{structure?,
chat_context?}``, no sly_data, tool calls or usage.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from farm.agents.base import Conversation
from farm.agents.neuro_san import CHAT_CONTEXT_STATE
from farm.agents.neuro_san_mcp import create_neuro_san_mcp_agent
from farm.errors import AgentError
from tests.agents.test_neuro_san_genuine import FIXTURE, Genuine, converse, genuine, request  # noqa: F401 (the fixture)

pytest.importorskip("mcp", reason="the MCP Python SDK is not installed (pip install '.[mcp]' in the farm's checkout)")

pytestmark = pytest.mark.slow

CASES = FIXTURE / "cases"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(genuine: Genuine) -> Genuine:  # noqa: F811 (the genuine server, started once for this module)
    return genuine


def sweep(server: Genuine, tmp_path: Path, *files: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    out = tmp_path / "r.json"
    inputs = [str(CASES / f) for f in files] if len(files) == 1 else [str(CASES)]
    done = subprocess.run([sys.executable, "-m", "farm", "test", "-i", *inputs, "--server", server.url,
                           "--no-history", "--no-progress", "-o", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    return done, json.loads(out.read_text()) if out.exists() else {}


def test_the_same_cases_give_the_same_verdicts_over_http_and_mcp(server: Genuine, tmp_path: Path) -> None:
    done, report = sweep(server, tmp_path)
    assert done.returncode == 1, done.stderr  # wrong_structure fails, over both
    verdicts = {c["id"]: (c["case_passed"], c["runs"], c["passed"]) for c in report["results"]}
    pairs = {}
    for case_id, verdict in verdicts.items():
        name, _, connection = case_id.partition("@")
        pairs.setdefault(name, {})[connection or "mcp"] = verdict
    for name in ("multi_turn", "sly_data", "structure", "success_ratio", "wrong_structure"):
        assert pairs[name]["http"] == pairs[name]["mcp"], (name, pairs[name])
    for name in ("multi_turn", "sly_data", "structure"):
        assert pairs[name]["mcp"] == (True, 1, 1), (name, pairs[name])
    assert pairs["success_ratio"]["mcp"] == (True, 3, 3)
    assert pairs["wrong_structure"]["mcp"] == (False, 1, 0)
    assert pairs["mcp_only"]["mcp"] == (True, 1, 1)  # an mcp-only file runs
    assert verdicts["sly_data_returned@http"] == (True, 1, 1)
    skipped = report["summary"]["skipped_ids"]
    assert sorted(skipped) == ["grpc_only@grpc", "sly_data_returned@mcp"]
    assert "sly_data_returned@mcp skipped: connection 'mcp' cannot check the sly_data the agent returns" in done.stderr
    assert "grpc_only@grpc skipped: connection 'grpc' is not spoken: neuro-san's gRPC service: neuro-san " \
           "dropped its gRPC service in 0.6.0 (0.5.68 was the last to serve it" in done.stderr


def test_chat_context_goes_round_over_mcp(server: Genuine) -> None:
    conversation = Conversation(chat_id="m")
    agent = create_neuro_san_mcp_agent(server.url, "echo")
    first, second = converse(agent, request("first words", conversation), request("second words", conversation))
    assert (first.text, second.text) == ("first words", "second words")
    assert agent.carries_context is True  # read from the tool's input schema
    assert first.served is not None and first.served.server_version  # SPEC 25: the server's health check says it
    messages = conversation.state[CHAT_CONTEXT_STATE]["chat_histories"][0]["messages"]
    assert [(m["type"], m["text"]) for m in messages] == [("HUMAN", "first words"), ("AI", "first words"),
                                                          ("HUMAN", "second words"), ("AI", "second words")]


def test_text_and_structure_come_back_as_over_http(server: Genuine) -> None:
    reply = converse(create_neuro_san_mcp_agent(server.url, "nerd"),
                     request('{"answer": "The Beatles", "running_cost": 3.0}'))[0]
    assert (reply.text, reply.structure) == ("", {"answer": "The Beatles", "running_cost": 3.0})
    sly = converse(create_neuro_san_mcp_agent(server.url, "multiply"),
                   request("please calc it", sly_data={"x": 6, "y": 7}))[0]
    assert (sly.text, sly.sly_data) == ("tool said: product is 42", None)


def test_unknown_tool_and_failing_agent(server: Genuine) -> None:
    with pytest.raises(AgentError, match=r"unknown MCP tool 'nope' on server .*\(it serves: .*echo"):
        converse(create_neuro_san_mcp_agent(server.url, "nope"), request("hello"))
    with pytest.raises(AgentError, match="Error from broken: Agent stopped due to exception"):  # as over HTTP
        converse(create_neuro_san_mcp_agent(server.url, "broken"), request("hello"))


def test_a_timeout_ends_the_call(server: Genuine) -> None:
    """The farm closes the MCP stream (``tests/agents/test_cancel_timeouts.py`` sees the hang-up); the
    genuine server's MCP handler (0.6.98) answers with one JSON write at the end, so it notices
    only then and finishes the agent's work anyway: its log has no cancel for the call."""
    with pytest.raises(TimeoutError, match="no answer within 1s; MCP stream closed"):
        converse(create_neuro_san_mcp_agent(server.url, "slow"), request("hurry", timeout_s=1.0))
