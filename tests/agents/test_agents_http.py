"""The HTTP adapter against a real agent server on 127.0.0.1 (examples/servers/json_agent_server.py)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator

import pytest

from farm.agents.base import Conversation
from farm.agents.http import HttpAgent, create_http_agent
from farm.errors import AgentError, AgentResolutionError
from tests.support.servers import (
    HOST,
    Served,
    agent_request,
    free_port,
    json_agent_server,
    load_example,
    open_sessions,
    serve_in_thread,
)


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    with json_agent_server() as served:
        yield served


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FARM_RETRY_ATTEMPTS", raising=False)


def unique(text: str = "hello") -> str:
    """A message nobody else sends: the server counts hits per last user message."""
    return f"{text} {uuid.uuid4().hex[:8]}"


def ask(agent: HttpAgent, request: object) -> object:
    async def go() -> object:
        try:
            return await agent.respond(request)  # type: ignore[arg-type]
        finally:
            await agent.aclose()

    return asyncio.run(go())


def test_echo_fills_text_sly_data_and_usage(server: Served) -> None:
    agent = create_http_agent(server.url + "/echo")
    reply = ask(agent, agent_request("hi there", sly_data={"user": "ann"}))
    assert reply.text == "hi there"
    assert reply.structure is None
    assert reply.sly_data == {"user": "ann", "turns": 1}
    assert reply.usage == {"prompt_tokens": 2, "completion_tokens": 2}
    assert reply.raw["response"]["status"] == 200


def test_the_request_carries_messages_sly_data_and_context(server: Served) -> None:
    agent = create_http_agent(server.url + "/structure")
    history = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "answer"},
        {"role": "user", "content": "second"},
    ]
    reply = ask(agent, agent_request(history, user_id="bob", case_id="T1", run=3))
    assert reply.structure["last"] == "second"
    assert reply.structure["messages"] == 3
    context = reply.structure["context"]
    assert (context["user_id"], context["case_id"], context["run"], context["chat_id"]) == ("bob", "T1", 3, "chat-test")
    assert context["locale"] == "en-us"


def test_a_multi_turn_conversation_sends_the_growing_history(server: Served) -> None:
    agent = create_http_agent(server.url + "/echo")

    async def go() -> list[object]:
        history: list[dict[str, object]] = []
        sly: dict[str, object] | None = {"seed": 1}
        replies = []
        for text in ("one", "two", "three"):
            history.append({"role": "user", "content": text})
            reply = await agent.respond(agent_request(list(history), sly_data=sly))
            history.append({"role": "assistant", "content": reply.text})
            sly = reply.sly_data
            replies.append(reply)
        await agent.aclose()
        return replies

    replies = asyncio.run(go())
    assert [r.text for r in replies] == ["one", "two", "three"]
    assert replies[-1].sly_data == {"seed": 1, "turns": 3}


@pytest.mark.parametrize(
    ("mode", "text", "structure"),
    [
        ("bare", None, {"answer": "yo", "turns": 1}),
        ("list", None, ["first", "yo"]),
        ("text", "plain: yo", None),
        ("html", "<p>yo</p>", None),
    ],
)
def test_answers_that_are_not_reply_objects(server: Served, mode: str, text: str | None, structure: object) -> None:
    reply = ask(create_http_agent(f"{server.url}/{mode}"), agent_request("yo"))
    assert reply.text == text
    assert reply.structure == structure


def test_tool_calls_are_read(server: Served) -> None:
    reply = ask(create_http_agent(server.url + "/tools"), agent_request("find cats"))
    assert reply.text == "searched"
    assert [(c.name, c.arguments, c.result) for c in reply.tool_calls] == [("search", {"q": "find cats"}, {"hits": 1})]


def test_a_server_error_fails_at_once_without_retries(server: Served) -> None:
    message = unique()
    conversation = Conversation(chat_id="c")
    with pytest.raises(AgentError) as caught:
        ask(create_http_agent(server.url + "/error?status=500"), agent_request(message, conversation=conversation))
    assert "HTTP 500" in caught.value.message
    assert "the agent fell over" in caught.value.message
    assert server.hits(message) == 1
    assert caught.value.retries == 0 == conversation.retries


def test_503_then_ok_is_retried(server: Served) -> None:
    message = unique()
    conversation = Conversation(chat_id="c")
    agent = create_http_agent(server.url + "/flaky?status=503&n=2")
    reply = ask(agent, agent_request(message, conversation=conversation))
    assert reply.text == message
    assert server.hits(message) == 3
    assert conversation.retries == 2


@pytest.mark.parametrize("retry_after", ["1", "date:1"])
def test_429_with_retry_after_is_honoured(server: Served, retry_after: str) -> None:
    message = unique()
    conversation = Conversation(chat_id="c")
    agent = create_http_agent(f"{server.url}/flaky?status=429&n=1&retry_after={retry_after}")
    reply = ask(agent, agent_request(message, conversation=conversation))
    assert reply.text == message
    assert server.hits(message) == 2
    assert conversation.retries == 1


def test_retries_run_out(server: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_RETRY_ATTEMPTS", "2")
    message = unique()
    conversation = Conversation(chat_id="c")
    with pytest.raises(AgentError) as caught:
        ask(create_http_agent(server.url + "/flaky?status=502&n=5"), agent_request(message, conversation=conversation))
    assert server.hits(message) == 2
    assert caught.value.retries == 1 == conversation.retries
    assert "HTTP 502" in caught.value.message


def test_a_crash_mid_response_is_an_agent_error(server: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_RETRY_ATTEMPTS", "2")
    message = unique()
    with pytest.raises(AgentError) as caught:
        ask(create_http_agent(server.url + "/crash"), agent_request(message))
    assert server.hits(message) == 2  # a broken connection is transient: retried once
    assert caught.value.retries == 1
    assert "connection lost" in caught.value.message


def test_malformed_json_is_an_agent_error_without_retries(server: Served) -> None:
    message = unique()
    with pytest.raises(AgentError, match="declared JSON does not parse") as caught:
        ask(create_http_agent(server.url + "/malformed"), agent_request(message))
    assert server.hits(message) == 1
    assert caught.value.retries == 0


def test_connection_refused_is_retried_then_an_agent_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_RETRY_ATTEMPTS", "3")
    conversation = Conversation(chat_id="c")
    agent = create_http_agent(f"http://127.0.0.1:{free_port()}/echo")
    with pytest.raises(AgentError) as caught:
        ask(agent, agent_request("hi", conversation=conversation))
    assert caught.value.retries == 2 == conversation.retries
    assert "connection failed" in caught.value.message


def test_cancellation_cuts_the_call_off_cleanly(server: Served) -> None:
    agent = create_http_agent(server.url + "/slow?s=5")
    fast = create_http_agent(server.url + "/echo")

    async def go() -> str:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(agent.respond(agent_request(unique())), 0.5)
        assert open_sessions(agent) == 1
        # the adapter is still usable, and nothing is left running in the loop
        reply = await asyncio.wait_for(fast.respond(agent_request("after")), 5)
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        await agent.aclose()
        await fast.aclose()
        assert others == []
        return reply.text

    assert asyncio.run(go()) == "after"


def test_the_turn_timeout_is_a_backstop_after_the_callers_deadline(server: Served) -> None:
    with pytest.raises(AgentError, match=r"no answer within 1\.3s"):
        ask(create_http_agent(server.url + "/slow?s=5"), agent_request(unique(), timeout_s=0.3))


def test_the_manifest_timeout_bounds_the_request(server: Served) -> None:
    agent = create_http_agent(server.url + "/slow?s=5", manifest={"timeout": "300ms"})
    with pytest.raises(AgentError, match=r"no answer within 0\.3s"):
        ask(agent, agent_request(unique(), timeout_s=60))


def test_one_agent_serves_several_event_loops(server: Served) -> None:
    agent = create_http_agent(server.url + "/echo")
    answers: dict[str, str] = {}

    def worker(name: str) -> None:
        async def go() -> None:
            for i in range(3):
                answers[f"{name}{i}"] = (await agent.respond(agent_request(f"{name}{i}"))).text
            await agent.aclose()

        asyncio.run(go())

    threads = [threading.Thread(target=worker, args=(n,)) for n in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert answers == {f"{n}{i}": f"{n}{i}" for n in "abc" for i in range(3)}


def test_concurrent_calls_share_one_session_and_its_kept_alive_connections() -> None:
    module = load_example("json_agent_server")

    class CountingServer(module.AgentServer):  # type: ignore[name-defined,misc]
        connections = 0

        def process_request(self, request: object, client_address: object) -> None:
            with self.lock:
                self.connections += 1
            super().process_request(request, client_address)

    with serve_in_thread(CountingServer((HOST, 0))) as served:
        agent = create_http_agent(served.url + "/slow?s=0.3")

        async def go() -> tuple[int, list[str]]:
            texts = []
            for wave in range(2):
                replies = await asyncio.gather(*(agent.respond(agent_request(f"m{wave}.{i}")) for i in range(25)))
                texts += [r.text for r in replies]
            count = open_sessions(agent)
            await agent.aclose()
            return count, texts

        sessions, texts = asyncio.run(go())
    assert sessions == 1
    assert texts == [f"m{wave}.{i}" for wave in range(2) for i in range(25)]
    assert served.server.connections == 25  # the second wave reused the first wave's connections


# ------------------------------------------------------------------------------------ manifests


def test_a_manifest_template_headers_and_response_paths(server: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_TEST_HTTP_TOKEN", "tok-http-secret-42")
    manifest = {
        "type": "http",
        "headers": {"Authorization": "Bearer $ENV.FARM_TEST_HTTP_TOKEN", "X-Team": "{{ignored}}"},
        "request": {
            "prompt": "{{last_message}}",
            "history": "{{messages}}",
            "who": "user {{context.user_id}} in {{context.team_id}}",
            "private": "{{sly_data}}",
            "fixed": [1, True, None],
        },
        "response": {"text": "$.received.prompt", "structure": "$.received.who", "sly_data": "$.received.private"},
        "timeout": "30s",
    }
    agent = create_http_agent(server.url + "/mirror", manifest=manifest, agent_id="mirror")
    reply = ask(agent, agent_request("hello you", sly_data={"k": 1}, user_id="ann"))
    assert reply.text == "hello you"
    assert reply.structure == "user ann in test-team"
    assert reply.sly_data == {"k": 1}
    received = server.server.requests[-1]
    assert received["body"]["history"] == [{"role": "user", "content": "hello you"}]
    assert received["body"]["fixed"] == [1, True, None]
    assert received["headers"]["Authorization"] == "Bearer tok-http-secret-42"
    dumped = reply.model_dump_json()  # the server echoed the token back: it is masked anyway
    assert "tok-http-secret-42" not in dumped
    assert reply.raw["request"]["headers"]["Authorization"] == "***"


def test_response_paths_that_match_nothing_give_none(server: Served) -> None:
    manifest = {"response": {"text": "$.nothing.here"}}
    reply = ask(create_http_agent(server.url + "/mirror", manifest=manifest), agent_request("x"))
    assert reply.text is None and reply.structure is None


def test_an_error_message_never_holds_the_token(server: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_TEST_HTTP_TOKEN2", "tok-in-an-error-77")
    manifest = {"headers": {"X-Api-Key": "$ENV.FARM_TEST_HTTP_TOKEN2"}}
    agent = create_http_agent(server.url + "/error?status=401&x=tok-in-an-error-77", manifest=manifest)
    with pytest.raises(AgentError) as caught:
        ask(agent, agent_request("x"))
    assert "tok-in-an-error-77" not in str(caught.value)


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (
            {"headers": {"Authorization": "$ENV.FARM_TEST_UNSET_VAR"}},
            r"a\.yao: headers\.Authorization: .*FARM_TEST_UNSET_VAR",
        ),
        ({"headers": ["x"]}, r"headers: expected an object"),
        ({"request": {"q": "{{question}}"}}, r"request\.q: unknown variable \{\{question\}\}"),
        ({"request": ["{{sly_data.x}}"]}, r"request\[0\]: unknown variable"),
        ({"response": {"answer": "$.a"}}, r"response\.answer: unknown reply field"),
        ({"response": {"text": "$..[?"}}, r"response\.text: invalid JSONPath"),
        ({"timeout": "soon"}, r"a\.yao: timeout: not a duration: 'soon'"),
        ({"timeout": 0}, r"a\.yao: timeout: duration must be positive"),
    ],
)
def test_bad_manifests_are_refused(manifest: dict[str, object], message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FARM_TEST_UNSET_VAR", raising=False)
    with pytest.raises(AgentResolutionError, match=message):
        create_http_agent("http://127.0.0.1:1/", manifest=manifest, source="a.yao")


def test_a_bad_url_is_refused() -> None:
    with pytest.raises(AgentResolutionError, match="url: expected an http"):
        create_http_agent("ftp://example.com")


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(30, 30.0), ("30", 30.0), (".5s", 0.5), ("30s", 30.0), ("1m", 60.0), ("2m30s", 150.0), ("500ms", 0.5)],
)
def test_a_manifest_timeout_takes_every_duration_suites_take(value: object, seconds: float) -> None:
    agent = create_http_agent("http://127.0.0.1:1/", manifest={"timeout": value}, source="a.yao")
    assert agent.timeout_s == seconds


@pytest.mark.slow  # starts a farm process, a server or an agent program
def test_the_example_agent_runs_as_a_program() -> None:
    with json_agent_server(separate_process=True) as served:
        reply = ask(create_http_agent(served.url + "/echo"), agent_request("from a process"))
        assert reply.text == "from a process"
        assert served.hits("from a process") == 1


# ------------------------------------------------------------------------- cost-saving paths


def test_raw_holds_the_exchange_with_secrets_masked(server: Served) -> None:
    from farm.agents.secrets import register_secret

    secret = f"sk-raw-{uuid.uuid4().hex}"
    register_secret(secret)
    agent = create_http_agent(server.url + "/echo")
    plain = ask(agent, agent_request("no secret here", sly_data={"k": "v"}))
    assert plain.raw["request"]["body"]["sly_data"] == {"k": "v"}
    assert plain.raw["request"]["body"]["messages"][-1]["content"] == "no secret here"
    agent = create_http_agent(server.url + "/echo")
    leaky = ask(agent, agent_request("hi", sly_data={"key": secret, secret: [f"x{secret}y"]}))
    dumped = leaky.model_dump_json()
    assert secret not in dumped
    assert leaky.raw["request"]["body"]["sly_data"] == {"key": "***", "***": ["x***y"]}


def test_manifest_response_paths_use_the_suites_jsonpath_grammar() -> None:
    # Filters ([?...]) parse in suites (jsonpath_ng.ext); manifests use the same grammar.
    from farm.agents.http import apply_response_paths, compile_response_paths

    paths = compile_response_paths({"text": "$.items[?kind = 'answer'].text"}, where="response")
    reply = apply_response_paths({"items": [{"kind": "note", "text": "n"}, {"kind": "answer", "text": "42"}]},
                                 paths, raw=None)
    assert reply.text == "42"
