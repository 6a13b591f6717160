"""Judges: verdicts pass/fail/equivocal/error through the real OpenAI-compatible server, and agent judges."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.agents.judge import JudgeResolver, create_judge_resolver
from farm.agents.options import AgentOptions
from farm.checks.base import JudgeVerdict
from farm.errors import AgentResolutionError
from tests.support.servers import Served, openai_server

KEY = "sk-judge-key-1618"


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    with openai_server(key=KEY) as served:
        yield served


@pytest.fixture
def root(tmp_path: Path, server: Served, monkeypatch: pytest.MonkeyPatch) -> Path:
    """connectors/local/{judge,broken}.conn.yao and an agents root with a judge agent."""
    monkeypatch.setenv("FARM_TEST_JUDGE_KEY", KEY)
    monkeypatch.delenv("FARM_AGENTS_ROOT", raising=False)
    monkeypatch.delenv("FARM_CONNECTORS_ROOT", raising=False)
    for name, model in (("judge", "judge-model"), ("broken", "error-500")):
        path = tmp_path / "connectors" / "local" / f"{name}.conn.yao"
        path.parent.mkdir(parents=True, exist_ok=True)
        options = {"model": model, "host": server.url, "key": "$ENV.FARM_TEST_JUDGE_KEY"}
        path.write_text(json.dumps({"type": "openai", "options": options}))
    critic = tmp_path / "assistants" / "critic"
    critic.mkdir(parents=True)
    (critic / "package.yao").write_text('{"connector": "local.judge"}')
    (critic / "prompts.yml").write_text("- role: system\n  content: You are a fair judge of answers.\n")
    (tmp_path / "verdict.py").write_text("import sys; sys.stdin.read(); print('FAIL - too short')\n")
    return tmp_path


def judge(
    resolver: JudgeResolver, use: str | None, criterion: str, actual: object, input: object = "q"
) -> JudgeVerdict:
    async def go() -> JudgeVerdict:
        try:
            return await resolver(use).judge(criterion=criterion, actual=actual, input=input)
        finally:
            await resolver.aclose()

    return asyncio.run(go())


def test_pass_and_fail_through_the_default_judge(root: Path, server: Served) -> None:
    resolver = create_judge_resolver(AgentOptions.from_env(root, judge="local.judge"))
    passed = judge(resolver, None, "mentions 'Paris'", "Paris is the capital of France.")
    assert passed == JudgeVerdict("pass", "all terms found")
    failed = judge(resolver, None, "mentions 'Berlin'", "Paris is the capital of France.")
    assert failed.verdict == "fail"
    assert "Berlin" in failed.reason
    sent = server.server.requests[-1]["body"]
    assert sent["temperature"] == 0
    assert sent["messages"][0]["role"] == "system"


def test_an_answer_that_is_neither_pass_nor_fail_is_equivocal(root: Path) -> None:
    resolver = create_judge_resolver(AgentOptions.from_env(root, judge="local.judge"))
    verdict = judge(resolver, None, "JUDGE_EQUIVOCAL sounds friendly", "hello")
    assert verdict.verdict == "equivocal"


def test_non_string_values_reach_the_judge_as_json(root: Path, server: Served) -> None:
    resolver = create_judge_resolver(AgentOptions.from_env(root, judge="local.judge"))
    verdict = judge(resolver, None, "has the 'answer' key", {"answer": 42, "b": [1, 2]}, input={"q": 1})
    assert verdict.verdict == "pass"
    user = json.loads(server.server.requests[-1]["body"]["messages"][1]["content"])
    assert user == {"output": {"answer": 42, "b": [1, 2]}, "input": {"q": 1}, "criteria": "has the 'answer' key"}


def test_use_names_a_connector(root: Path) -> None:
    resolver = create_judge_resolver(AgentOptions.from_env(root))
    assert judge(resolver, "local.judge", "JUDGE_PASS", "anything").verdict == "pass"


def test_a_failing_connector_is_an_error_verdict_not_an_exception(root: Path) -> None:
    resolver = create_judge_resolver(AgentOptions.from_env(root))
    verdict = judge(resolver, "local.broken", "JUDGE_PASS", "x")
    assert verdict.verdict == "error"  # a judge that cannot be asked is not one that could not decide
    assert verdict.reason.startswith("judge error: connector local.broken: HTTP 500")
    assert KEY not in verdict.reason


def test_no_judge_configured(root: Path) -> None:
    resolver = create_judge_resolver(AgentOptions.from_env(root))
    with pytest.raises(AgentResolutionError, match="no judge: pass --judge CONNECTOR"):
        resolver(None)


def test_an_unknown_judge_connector(root: Path) -> None:
    resolver = create_judge_resolver(AgentOptions.from_env(root))
    with pytest.raises(AgentResolutionError, match=r"unknown connector 'local\.nope'"):
        resolver("local.nope")


def test_judges_are_kept_for_the_sweep(root: Path) -> None:
    resolver = create_judge_resolver(AgentOptions.from_env(root, judge="local.judge"))
    assert resolver(None) is resolver(None)


def test_an_agent_as_judge_by_id(root: Path) -> None:
    resolver = create_judge_resolver(AgentOptions.from_env(root))
    verdict = judge(resolver, "agents:critic", "mentions 'tea'", "I like tea")
    assert verdict.verdict == "pass"


@pytest.mark.slow  # starts a farm process, a server or an agent program
def test_an_agent_as_judge_by_reference(root: Path) -> None:
    resolver = create_judge_resolver(AgentOptions.from_env(root))
    verdict = judge(resolver, "agents:cmd:verdict.py", "anything", "x")
    assert verdict == JudgeVerdict("fail", "too short")


def test_an_unknown_agent_judge(root: Path) -> None:
    resolver = create_judge_resolver(AgentOptions.from_env(root))
    with pytest.raises(AgentResolutionError, match="'nobody' not found"):
        resolver("agents:nobody")
