"""Prompt agents end to end: package.yao + prompts.yml + a connector, against a real server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.agents.options import AgentOptions
from farm.agents.prompt import PromptAgent, create_prompt_agent, load_prompts
from farm.errors import AgentError, AgentResolutionError
from farm.models import Reply
from tests.support.servers import Served, agent_request, openai_server

KEY = "sk-prompt-agent-key-2718"
PROMPTS = """\
- role: system
  content: |
    You extract keywords from the user's text.
    Answer with JSON: {"keywords": [...]}
"""


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    with openai_server(key=KEY) as served:
        yield served


@pytest.fixture
def workspace(tmp_path: Path, server: Served, monkeypatch: pytest.MonkeyPatch) -> Path:
    """assistants/keyword (package.yao + prompts.yml) and connectors/ pointing at the server."""
    monkeypatch.setenv("FARM_TEST_PROMPT_KEY", KEY)
    agent = tmp_path / "assistants" / "keyword"
    agent.mkdir(parents=True)
    (agent / "package.yao").write_text('{"name": "keyword", "connector": "local.echo"}')
    (agent / "prompts.yml").write_text(PROMPTS)
    for name, model in (("echo", "echo"), ("broken", "error-500"), ("nokey", "echo")):
        options = {"model": model, "host": server.url + "/v1", "key": "$ENV.FARM_TEST_PROMPT_KEY"}
        if name == "nokey":
            options.pop("key")
        path = tmp_path / "connectors" / "local" / f"{name}.conn.yao"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"type": "openai", "options": options}))
    return tmp_path


def options(root: Path, **overrides: str) -> AgentOptions:
    return AgentOptions.from_env(root, **overrides)


def manifest(root: Path) -> dict[str, object]:
    return json.loads((root / "assistants" / "keyword" / "package.yao").read_text())


def ask(agent: PromptAgent, request: object) -> Reply:
    async def go() -> Reply:
        try:
            return await agent.respond(request)  # type: ignore[arg-type]
        finally:
            await agent.aclose()

    return asyncio.run(go())


def test_prompts_and_messages_go_to_the_connector(workspace: Path, server: Served) -> None:
    agent = create_prompt_agent(workspace / "assistants" / "keyword", manifest(workspace), options(workspace))
    reply = ask(agent, agent_request("Machine learning transforms healthcare"))
    assert agent.id == "keyword"
    assert json.loads(reply.text) == {"keywords": ["machine", "learning", "transforms", "healthcare"]}
    assert reply.structure is None  # the text stays text
    sent = server.server.requests[-1]["body"]
    assert sent["model"] == "echo"
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert KEY not in reply.model_dump_json()


def test_the_whole_history_is_sent_after_the_prompts(workspace: Path, server: Served) -> None:
    agent = create_prompt_agent(workspace / "assistants" / "keyword", manifest(workspace), options(workspace))
    history = [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "second question"},
    ]
    ask(agent, agent_request(history))
    sent = server.server.requests[-1]["body"]["messages"]
    assert [m["content"] for m in sent[1:]] == ["first question", "first answer", "second question"]


def test_the_connector_flag_wins(workspace: Path) -> None:
    agent_dir = workspace / "assistants" / "keyword"
    agent = create_prompt_agent(agent_dir, manifest(workspace), options(workspace, connector="local.broken"))
    assert agent.connector.id == "local.broken"
    with pytest.raises(AgentError, match=r"connector local\.broken: HTTP 500"):
        ask(agent, agent_request("x"))


def test_a_missing_key_is_refused_by_the_server_and_no_key_leaks(workspace: Path) -> None:
    agent_dir = workspace / "assistants" / "keyword"
    agent = create_prompt_agent(agent_dir, manifest(workspace), options(workspace, connector="local.nokey"))
    with pytest.raises(AgentError, match="HTTP 401") as caught:
        ask(agent, agent_request("x"))
    assert KEY not in str(caught.value)


def test_no_connector_anywhere(workspace: Path) -> None:
    with pytest.raises(AgentResolutionError, match=r"package\.yao: connector: missing .*-c CONNECTOR"):
        create_prompt_agent(workspace / "assistants" / "keyword", {}, options(workspace))


def test_an_unknown_connector(workspace: Path) -> None:
    with pytest.raises(AgentResolutionError, match=r"unknown connector 'openai\.gpt-4o' \(known: local\.broken"):
        create_prompt_agent(workspace / "assistants" / "keyword", {"connector": "openai.gpt-4o"}, options(workspace))


def test_temperature_from_the_manifest_options(workspace: Path, server: Served) -> None:
    data = {**manifest(workspace), "options": {"temperature": 0.25}}
    ask(create_prompt_agent(workspace / "assistants" / "keyword", data, options(workspace)), agent_request("x"))
    assert server.server.requests[-1]["body"]["temperature"] == 0.25


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- role: system\n  content: [unclosed\n", r"prompts\.yml:\d+: "),
        ("role: system\n", r"expected a list of \{role, content\}, got dict"),
        ("- just text\n", r"\[0\]: expected \{role, content\}"),
        ("- content: hi\n", r"\[0\]\.role: missing"),
        ("- role: system\n", r"\[0\]\.content: expected text"),
    ],
)
def test_bad_prompts(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "prompts.yml").write_text(text)
    with pytest.raises(AgentResolutionError, match=message):
        load_prompts(tmp_path / "prompts.yml")


def test_no_prompts_file_means_no_prompts(tmp_path: Path) -> None:
    assert load_prompts(tmp_path / "prompts.yml") == []
