"""Connectors: the Yao .conn.yao layout, $ENV keys, and chat completions against a real server."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.agents.base import Conversation
from farm.agents.connectors import Connector, completion_reply, load_connectors
from farm.errors import AgentError, AgentResolutionError
from farm.models import Reply
from tests.support.servers import Served, openai_server

KEY = "sk-connector-test-key-31337"


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    with openai_server(key=KEY) as served:
        yield served


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_TEST_CONNECTOR_KEY", KEY)
    monkeypatch.delenv("FARM_RETRY_ATTEMPTS", raising=False)


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def connector(host: str, model: str = "echo", key: str = "$ENV.FARM_TEST_CONNECTOR_KEY") -> str:
    return json.dumps({"type": "openai", "label": "Local", "options": {"model": model, "host": host, "key": key}})


def chat(conn: Connector, messages: list[dict[str, object]] | str, **kwargs: object) -> Reply:
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]

    async def go() -> Reply:
        try:
            return await conn.chat(messages, **kwargs)  # type: ignore[arg-type]
        finally:
            await conn.aclose()

    return asyncio.run(go())


def local(server: Served, model: str = "echo") -> Connector:
    return Connector(id=f"local.{model}", model=model, host=server.url, key=KEY)


# ------------------------------------------------------------------------------------- loading


def test_yao_layout_ids_comments_and_env_keys(tmp_path: Path) -> None:
    write(
        tmp_path,
        "openai/gpt-4o.conn.yao",
        """// a comment, as Yao allows
        {
          label: "GPT-4o",  /* JSON5 */
          type: "openai",
          options: {model: "gpt-4o", key: "$ENV.FARM_TEST_CONNECTOR_KEY", host: "http://h:1/v1"},
        }""",
    )
    write(tmp_path, "local/deep/echo.conn.yao", '{"type": "openai", "model": "echo", "host": "http://h:2"}')
    registry = load_connectors(tmp_path)
    assert registry.ids() == ["local.deep.echo", "openai.gpt-4o"]
    gpt = registry.get("openai.gpt-4o")
    assert (gpt.model, gpt.key, gpt.label, gpt.endpoint) == ("gpt-4o", KEY, "GPT-4o", "http://h:1/v1/chat/completions")
    echo = registry.get("local.deep.echo")  # options at the top level work too
    assert (echo.model, echo.key, echo.endpoint) == ("echo", None, "http://h:2/v1/chat/completions")
    assert KEY not in repr(gpt)


@pytest.mark.parametrize(
    ("host", "endpoint"),
    [
        ("http://h:1", "http://h:1/v1/chat/completions"),
        ("http://h:1/", "http://h:1/v1/chat/completions"),
        ("http://h:1/v1/", "http://h:1/v1/chat/completions"),
        ("http://h:1/openai/v1", "http://h:1/openai/v1/chat/completions"),
        ("http://h:1/v1/chat/completions", "http://h:1/v1/chat/completions"),
    ],
)
def test_endpoints(host: str, endpoint: str) -> None:
    assert Connector(id="x", model="m", host=host).endpoint == endpoint


def test_a_missing_env_variable_names_the_file_and_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FARM_TEST_UNSET_KEY", raising=False)
    write(tmp_path, "a/b.conn.yao", connector("http://h", key="$ENV.FARM_TEST_UNSET_KEY"))
    write(tmp_path, "a/ok.conn.yao", connector("http://h"))
    registry = load_connectors(tmp_path)
    assert registry.get("a.ok").key == KEY  # a broken neighbour harms no one
    with pytest.raises(AgentResolutionError, match=r"b\.conn\.yao: options\.key: .*FARM_TEST_UNSET_KEY"):
        registry.get("a.b")


def test_a_plain_setting_comes_from_the_environment_with_a_default_and_is_not_masked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from farm.agents.secrets import redact

    write(tmp_path, "a/h.conn.yao", connector("${FARM_TEST_LLM_HOST:-http://127.0.0.1:8001/v1}"))
    monkeypatch.delenv("FARM_TEST_LLM_HOST", raising=False)
    assert load_connectors(tmp_path).get("a.h").endpoint == "http://127.0.0.1:8001/v1/chat/completions"
    monkeypatch.setenv("FARM_TEST_LLM_HOST", "http://127.0.0.1:9123/v1")
    assert load_connectors(tmp_path).get("a.h").endpoint == "http://127.0.0.1:9123/v1/chat/completions"
    assert redact("asked http://127.0.0.1:9123/v1") == "asked http://127.0.0.1:9123/v1"  # a host is no secret


def test_an_unknown_id_lists_the_known_ones(tmp_path: Path) -> None:
    write(tmp_path, "openai/gpt-4o.conn.yao", connector("http://h"))
    with pytest.raises(AgentResolutionError, match=r"unknown connector 'openai\.gpt4' \(known: openai\.gpt-4o\)"):
        load_connectors(tmp_path).get("openai.gpt4")
    with pytest.raises(AgentResolutionError, match=r"no \*\.conn\.yao files"):
        load_connectors(tmp_path / "missing").get("x")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{model: ", r"x\.conn\.yao: not a valid connector file"),
        ("[1]", "expected an object"),
        ('{"type": "anthropic", "model": "c"}', r"type: 'anthropic' is not supported \(supported: openai\)"),
        ('{"options": {"host": "http://h"}}', r"options\.model: missing"),
        ('{"options": {"model": 5}}', r"options\.model: expected a string, got 5"),
        ('{"options": "x"}', r"options: expected an object"),
    ],
)
def test_bad_connector_files(tmp_path: Path, text: str, message: str) -> None:
    write(tmp_path, "x.conn.yao", text)
    with pytest.raises(AgentResolutionError, match=message):
        load_connectors(tmp_path).get("x")


# ---------------------------------------------------------------------------------------- chat


def test_chat_returns_text_and_usage_and_sends_the_key(server: Served, tmp_path: Path) -> None:
    write(tmp_path, "local/echo.conn.yao", connector(server.url))
    conn = load_connectors(tmp_path).get("local.echo")
    reply = chat(conn, "hello connector", temperature=0)
    assert reply.text == "hello connector"
    assert reply.usage == {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}
    sent = server.server.requests[-1]
    assert sent["headers"]["Authorization"] == f"Bearer {KEY}"
    assert sent["body"]["temperature"] == 0
    assert KEY not in reply.model_dump_json()


def test_cost_is_kept_when_the_server_reports_one(server: Served) -> None:
    reply = chat(local(server, "priced-echo"), "two words")
    assert reply.usage is not None and reply.usage["cost"] > 0


def test_tool_calls_have_parsed_arguments(server: Served) -> None:
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]
    reply = chat(local(server), "what is the weather in Oslo", tools=tools)
    assert reply.text is None
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("weather", {"input": "what is the weather in Oslo"})]


def test_a_wrong_key_is_an_error_that_does_not_show_the_key(server: Served) -> None:
    conn = Connector(id="local.bad", model="echo", host=server.url, key="sk-wrong-key-5555")
    from farm.agents.secrets import register_secret

    register_secret(conn.key)
    with pytest.raises(AgentError, match="HTTP 401") as caught:
        chat(conn, "x")
    assert "sk-wrong-key-5555" not in str(caught.value)
    assert caught.value.retries == 0


def test_429_then_ok_is_retried_honouring_retry_after(server: Served) -> None:
    message = f"rate limited {uuid.uuid4().hex}"
    conversation = Conversation(chat_id="c")
    reply = chat(local(server, "fail-429-then-ok"), message, conversation=conversation)
    assert reply.text == message
    assert server.hits(message) == 2
    assert conversation.retries == 1


def test_500_fails_at_once(server: Served) -> None:
    message = f"broken {uuid.uuid4().hex}"
    with pytest.raises(AgentError, match="HTTP 500"):
        chat(local(server, "error-500"), message)
    assert server.hits(message) == 1


@pytest.mark.parametrize(("model", "message"), [("malformed-json", "not JSON"), ("html", "not JSON")])
def test_unreadable_answers(server: Served, model: str, message: str) -> None:
    with pytest.raises(AgentError, match=message):
        chat(local(server, model), "x")


def test_an_answer_without_choices_is_an_error() -> None:
    with pytest.raises(AgentError, match=r"connector c: no choices\[0\]\.message"):
        completion_reply({"error": "nope"}, None, what="connector c")


def test_an_unknown_route_is_an_error(server: Served) -> None:
    conn = Connector(id="local.wrong", model="echo", host=server.url + "/nowhere", key=KEY)
    with pytest.raises(AgentError, match="HTTP 404"):
        chat(conn, "x")


def test_the_timeout_cuts_a_slow_server_off(server: Served) -> None:
    with pytest.raises(AgentError, match="no answer within"):
        chat(local(server, "slow-5s"), f"slow {uuid.uuid4().hex}", timeout_s=0.3)


@pytest.mark.slow  # starts a farm process, a server or an agent program
def test_the_example_server_runs_as_a_program() -> None:
    message = f"as a program {uuid.uuid4().hex}"
    with openai_server(key=KEY, separate_process=True) as served:
        reply = chat(local(served, "fail-503-then-ok"), message)
        assert reply.text == message
        assert served.hits(message) == 2  # read over GET /stats
