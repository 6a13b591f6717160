"""The neuro-san adapter against a real server speaking neuro-san's streaming chat API.

The server is ``examples/servers/neuro_san_server.py`` on a free 127.0.0.1 port; it checks that
a ``chat_context`` comes back exactly as it was handed out.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from farm.agents.base import Agent, AgentContext, AgentRequest, Conversation
from farm.agents.neuro_san import CHAT_CONTEXT_STATE, NeuroSanAgent, create_neuro_san_agent, list_agents
from farm.agents.neuro_san_stream import RAW_MESSAGES_KEPT, RAW_TEXT_KEPT, StreamReader, error_in_answer, message_type
from farm.agents.urls import parse_neuro_san_url
from farm.errors import AgentError, AgentResolutionError
from farm.models import Reply
from tests.support.servers import (
    EXAMPLE_SERVERS,
    HOST,
    Served,
    free_port,
    load_example,
    serve_in_thread,
    serve_subprocess,
)


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    module = load_example("neuro_san_server")
    with serve_in_thread(module.NeuroSanServer((HOST, 0))) as served:
        yield served


@pytest.fixture(scope="module")
def numeric_server() -> Iterator[Served]:
    module = load_example("neuro_san_server")
    with serve_in_thread(module.NeuroSanServer((HOST, 0), numeric_types=True)) as served:
        yield served


@pytest.fixture(autouse=True)
def default_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FARM_RETRY_ATTEMPTS", raising=False)


def request(
    text: str | list[dict[str, Any]],
    conversation: Conversation | None = None,
    *,
    sly_data: dict[str, Any] | None = None,
    chat_filter: str | None = None,
    metadata: dict[str, Any] | None = None,
    timeout_s: float | None = 30.0,
) -> AgentRequest:
    message = {"role": "user", "content": text}
    return AgentRequest(
        messages=[message],
        new_messages=[message],
        sly_data=sly_data,
        chat_filter=chat_filter,
        timeout_s=timeout_s,
        context=AgentContext(case_id="case-1", chat_id="chat-1", metadata=metadata),
        conversation=conversation or Conversation(chat_id="chat-1"),
    )


def converse(agent: NeuroSanAgent, *requests: AgentRequest) -> list[Reply]:
    """Send the turns in order on one event loop, then close the agent."""

    async def go() -> list[Reply]:
        try:
            return [await agent.respond(r) for r in requests]
        finally:
            await agent.aclose()

    return asyncio.run(go())


def ask(server: Served, agent: str, turn: AgentRequest) -> Reply:
    return converse(create_neuro_san_agent(server.url, agent), turn)[0]


def last_body(served: Served, agent: str) -> dict[str, Any]:
    with served.server.lock:
        return next(r["body"] for r in reversed(served.server.requests) if r["agent"] == agent)


# ------------------------------------------------------------------------------ pure parts


def test_references_parse_to_server_and_agent() -> None:
    assert parse_neuro_san_url("neuro-san://localhost:8080/hello_world") == ("http://localhost:8080", "hello_world")
    assert parse_neuro_san_url("neuro-san://10.0.0.5:9000/deep/math_guy") == ("http://10.0.0.5:9000", "deep/math_guy")
    assert parse_neuro_san_url("neuro-san://ns.example/echo") == ("http://ns.example:8080", "echo")
    for bad in ("neuro-san://host:8080", "neuro-san:///echo", "http://host/echo"):
        with pytest.raises(AgentResolutionError, match="neuro-san://host:port/agent"):
            parse_neuro_san_url(bad)


def test_create_checks_server_and_agent() -> None:
    agent = create_neuro_san_agent("127.0.0.1:8080/", "/deep/echo/")
    assert isinstance(agent, Agent)
    assert agent.url == "http://127.0.0.1:8080/api/v1/deep/echo/streaming_chat"
    assert agent.id == "neuro-san://127.0.0.1:8080/deep/echo"
    assert create_neuro_san_agent("https://ns.example", "echo", agent_id="x").url.startswith("https://ns.example/")
    with pytest.raises(AgentResolutionError, match="no agent name"):
        create_neuro_san_agent("http://127.0.0.1:8080", " ")
    with pytest.raises(AgentResolutionError, match="expected http"):
        create_neuro_san_agent("ftp://127.0.0.1", "echo")


def test_message_types_come_as_names_or_neuro_san_enum_numbers() -> None:
    numbers = {1: "SYSTEM", 2: "HUMAN", 4: "AI", 100: "AGENT", 101: "AGENT_FRAMEWORK", 103: "AGENT_TOOL_RESULT"}
    for number, name in numbers.items():
        assert message_type(number) == name
        assert message_type(str(number)) == name
        assert message_type(name.lower()) == name
    assert message_type(3) == "UNKNOWN(3)"  # not AI: neuro-san's AI is 4


def test_neuro_san_error_formats_are_recognised() -> None:
    assert error_in_answer("Error from broken: Agent stopped due to exception Connection error.", None)
    fenced = '```json\n{\n    "error": "Agent stopped",\n    "tool": "broken"\n}\n```'
    assert error_in_answer(fenced, None) == "Error from broken: Agent stopped"
    assert error_in_answer("", {"error": "boom", "tool": "t", "details": "trace"}) == "Error from t: boom (trace)"
    assert error_in_answer("The answer is 42", {"answer": 42}) is None
    assert error_in_answer("", {"error": "not found", "tool": "t", "hint": "a real answer"}) is None
    assert error_in_answer("No Error from here", None) is None


def test_the_raw_exchange_is_bounded_but_the_answer_is_read_to_the_end() -> None:
    reader = StreamReader("test agent")
    reader.feed_line(json.dumps({"response": {"type": "AGENT_PROGRESS", "text": ""}}))  # a heartbeat
    long_text = "x" * (RAW_TEXT_KEPT + 10)
    for _ in range(RAW_MESSAGES_KEPT + 5):
        reader.feed_line(json.dumps({"response": {"type": 100, "text": long_text, "origin": [{"tool": "a"}]}}))
    chat_context = {"chat_histories": [{"origin": [], "messages": [{"type": "AI", "text": "done"}]}]}
    final = {"type": 101, "text": "done", "chat_context": chat_context, "sly_data": {"k": 1}}
    reader.feed_line(json.dumps({"response": final, "request": {"user_message": {"text": "hi"}}}) + "\n")
    assert (reader.text, reader.chat_context, reader.sly_data) == ("done", chat_context, {"k": 1})
    assert len(reader.messages) == RAW_MESSAGES_KEPT and reader.dropped == 7  # 207 messages came
    assert reader.messages[0]["type"] == "AGENT_PROGRESS" and reader.messages[-1]["text"] == "done"
    assert reader.messages[1]["type"] == "AGENT" and reader.messages[1]["text"] == "x" * RAW_TEXT_KEPT + "…"
    assert reader.messages[-1]["chat_context"] == {"chat_histories": "<1 kept in the conversation>"}
    with pytest.raises(AgentError, match="test agent: line 208 of the stream is not JSON: <html>"):
        reader.feed_line("<html>")


# --------------------------------------------------------------------------- conversations


def test_chat_context_is_sent_back_verbatim_turn_after_turn(server: Served) -> None:
    conversation = Conversation(chat_id="c")
    agent = create_neuro_san_agent(server.url, "memory")
    replies = converse(agent, *(request(t, conversation) for t in ("alpha", "beta", "gamma")))
    assert [r.text for r in replies] == [
        "turn 1; previous: none",
        "turn 2; previous: alpha",
        "turn 3; previous: beta",
    ]
    assert conversation.state[CHAT_CONTEXT_STATE]["chat_histories"][0]["messages"][-2]["text"] == "gamma"
    assert replies[1].raw["request"]["chat_context"] == "<sent back from the previous turn>"


def test_an_altered_chat_context_is_noticed_by_the_server(server: Served) -> None:
    conversation = Conversation(chat_id="c")
    agent = create_neuro_san_agent(server.url, "memory")
    converse(agent, request("alpha", conversation))
    conversation.state[CHAT_CONTEXT_STATE]["chat_histories"][0]["messages"][0]["text"] = "tampered"
    with pytest.raises(AgentError, match="chat_context was altered"):
        converse(create_neuro_san_agent(server.url, "memory"), request("beta", conversation))


def test_a_fresh_conversation_sends_no_chat_context(server: Served) -> None:
    agent = create_neuro_san_agent(server.url, "memory")
    first, again = converse(agent, request("alpha", Conversation("c1")), request("beta", Conversation("c2")))
    assert first.text == again.text == "turn 1; previous: none"
    assert "chat_context" not in last_body(server, "memory")


def test_sly_data_goes_in_and_comes_back(server: Served) -> None:
    reply = ask(server, "math_guy", request("what is x times y?", sly_data={"x": 6, "y": 7, "secret": "s"}))
    assert reply.text == "The answer is 42"
    assert reply.sly_data == {"equals": 42}
    assert last_body(server, "math_guy")["sly_data"] == {"x": 6, "y": 7, "secret": "s"}
    plus = ask(server, "math_guy", request("x plus y", sly_data={"x": 1.5, "y": 2}))
    assert plus.sly_data == {"equals": 3.5}


def test_structure_stands_when_a_later_message_has_none(server: Served) -> None:
    conversation = Conversation(chat_id="c")
    agent = create_neuro_san_agent(server.url, "music_nerd_pro")
    first, second = converse(
        agent, request("Who wrote Yellow Submarine?", conversation), request("And Help?", conversation)
    )
    assert first.text == ""
    assert first.structure == {"answer": "The Beatles", "running_cost": 3.0}
    assert first.output == first.structure
    assert second.structure["running_cost"] == 6.0


def test_a_tool_output_given_as_data_is_the_call_result(server: Served) -> None:
    reply = ask(server, "music_nerd_pro", request("Yellow Submarine?", chat_filter="MAXIMAL"))
    assert [c.model_dump() for c in reply.tool_calls] == [
        {"name": "Accountant", "arguments": {"running_cost": 0.0}, "result": {"running_cost": 3.0}, "error": None}
    ]


def test_messages_of_tools_are_not_the_answer(server: Served) -> None:
    reply = ask(server, "echo", request("hello there"))
    assert reply.text == "hello there"
    tool_lines = [m for m in reply.raw["messages"] if len(m.get("origin", [])) == 2 and m["type"] == "AI"]
    assert tool_lines == [{"type": "AI", "origin": tool_lines[0]["origin"], "text": "repeater heard: hello there"}], (
        "the server must send a tool's AI message after the answer, else this test proves nothing"
    )


def test_content_parts_and_agent_names_with_slashes(server: Served) -> None:
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "first part"},
        {"type": "image_url", "image_url": {"url": "data:,"}},
        {"type": "text", "text": "second"},
    ]
    reply = ask(server, "deep/echo", request(parts))
    assert reply.text == "first part\nsecond"
    assert last_body(server, "deep/echo")["user_message"] == {"type": "HUMAN", "text": "first part\nsecond"}


# ------------------------------------------------------------------------ filter and headers


def test_minimal_and_maximal_filters_are_sent_and_honoured(server: Served) -> None:
    plain = ask(server, "echo", request("one two"))
    assert "chat_filter" not in last_body(server, "echo")
    minimal = ask(server, "echo", request("one two", chat_filter="minimal"))
    assert last_body(server, "echo")["chat_filter"] == {"chat_filter_type": "MINIMAL"}
    maximal = ask(server, "echo", request("one two", chat_filter="MAXIMAL"))
    assert last_body(server, "echo")["chat_filter"] == {"chat_filter_type": "MAXIMAL"}

    assert plain.text == minimal.text == maximal.text == "one two"
    assert minimal.tool_calls == [] and minimal.usage is None
    assert len(maximal.raw["messages"]) > len(minimal.raw["messages"])
    assert [c.model_dump() for c in maximal.tool_calls] == [
        {"name": "repeater", "arguments": {"text": "one two"}, "result": "one two", "error": None}
    ]
    assert maximal.usage == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7, "cost": 0.0}
    with pytest.raises(AgentError, match="chat_filter 'FULL' is not MINIMAL or MAXIMAL"):
        ask(server, "echo", request("x", chat_filter="FULL"))


def test_a_failed_tool_call_is_recorded(server: Served) -> None:
    reply = ask(server, "math_guy", request("x times y", chat_filter="MAXIMAL"))
    assert reply.text is not None and reply.text.startswith("I could not compute it.")
    (call,) = reply.tool_calls
    assert call.name == "calculator" and call.arguments == {"operator": "times"}
    assert call.error is not None and call.error.startswith("Error: x, y and an operator")


def test_metadata_and_environment_travel_as_headers(server: Served) -> None:
    metadata = {"team_tag": "blue", "priority": 3, "beta": True, "user_id": "ann"}
    reply = ask(server, "echo", request("hi", metadata=metadata))
    assert reply.sly_data is not None
    headers = reply.sly_data["headers"]
    assert {k: headers[k] for k in metadata} == {"team_tag": "blue", "priority": "3", "beta": "true", "user_id": "ann"}
    assert headers["case_id"] == "case-1" and headers["chat_id"] == "chat-1" and headers["run"] == "1"
    with pytest.raises(AgentError, match=r"metadata\.note: value cannot travel as an HTTP header"):
        ask(server, "echo", request("hi", metadata={"note": "two\nlines"}))
    with pytest.raises(AgentError, match=r"metadata\.my key: the name cannot be an HTTP header"):
        ask(server, "echo", request("hi", metadata={"my key": "v"}))


# ---------------------------------------------------------------------------------- failures


def test_timeout_closes_the_connection(server: Served) -> None:
    server.server.disconnected.clear()
    with pytest.raises(TimeoutError, match=r"no final answer within 0\.5s"):
        ask(server, "slow", request("wait", timeout_s=0.5))
    assert server.server.disconnected.wait(timeout=20), "the server never saw the client hang up"
    assert server.server.disconnects["slow"] >= 1


def test_a_stream_cut_midway_is_an_agent_error(server: Served) -> None:
    conversation = Conversation(chat_id="c")
    with server.server.lock:
        before = server.server.hits["crash"]
    with pytest.raises(AgentError, match="stream was cut after 1 line"):
        ask(server, "crash", request("go", conversation))
    assert conversation.retries == 0
    assert server.server.hits["crash"] == before + 1  # not retried: the agent may have acted


def test_an_error_answer_is_an_agent_error(server: Served) -> None:
    with pytest.raises(AgentError, match="Error from error: Agent stopped due to exception Connection error"):
        ask(server, "error", request("go"))


def test_a_bare_error_line_is_an_agent_error(server: Served) -> None:
    with pytest.raises(AgentError, match="server error: Internal server error"):
        ask(server, "internal_error", request("go"))


def test_an_unknown_agent_names_the_agents_served(server: Served) -> None:
    with pytest.raises(AgentError, match=r"unknown agent 'nope' on server http://127\.0\.0\.1:\d+ \(it serves: echo"):
        ask(server, "nope", request("go"))


def test_503_is_retried_then_answered(server: Served) -> None:
    text = f"again {uuid.uuid4().hex[:8]}"
    conversation = Conversation(chat_id="c")
    reply = ask(server, "flaky", request(text, conversation))
    assert reply.text == text
    assert conversation.retries == 2
    assert server.server.hits[f"flaky:{text}"] == 3


def test_connection_refused_gives_up_after_the_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_RETRY_ATTEMPTS", "2")
    conversation = Conversation(chat_id="c")
    agent = create_neuro_san_agent(f"http://{HOST}:{free_port()}", "echo")
    with pytest.raises(AgentError, match="connection failed") as caught:
        converse(agent, request("hello", conversation))
    assert caught.value.retries == 1 and conversation.retries == 1


def test_numeric_enum_types_are_understood(numeric_server: Served) -> None:
    maximal = ask(numeric_server, "echo", request("numbers", chat_filter="MAXIMAL"))
    assert maximal.text == "numbers"
    assert [c.name for c in maximal.tool_calls] == ["repeater"]
    assert {m["type"] for m in maximal.raw["messages"]} >= {"AI", "AGENT", "AGENT_FRAMEWORK", "AGENT_TOOL_RESULT"}
    conversation = Conversation(chat_id="c")
    agent = create_neuro_san_agent(numeric_server.url, "memory")
    replies = converse(agent, request("alpha", conversation), request("beta", conversation))
    assert replies[1].text == "turn 2; previous: alpha"


# --------------------------------------------------------------------------- listing, CLI


def test_list_agents(server: Served) -> None:
    names = asyncio.run(list_agents(server.url))
    assert {"echo", "math_guy", "memory", "music_nerd_pro", "slow", "crash", "error"} <= set(names)
    with pytest.raises(AgentError, match="cannot list agents"):
        asyncio.run(list_agents(f"http://{HOST}:{free_port()}"))


def test_the_example_server_runs_from_the_command_line() -> None:
    port = free_port()
    argv = [sys.executable, str(EXAMPLE_SERVERS / "neuro_san_server.py"), "--port", str(port)]
    with serve_subprocess(argv, port) as served:
        reply = converse(create_neuro_san_agent(f"{HOST}:{port}", "echo"), request("from a process"))[0]
        assert reply.text == "from a process"
        assert served.hits("echo") == 1
