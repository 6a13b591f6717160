"""``--record`` / ``--replay`` (SPEC 13): a replayed sweep makes zero calls and gives the same
verdicts; every run is its own recording; nothing secret is written."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from farm.agents.connectors import Connector
from farm.agents.http import create_http_agent
from farm.agents.judge import ConnectorJudge
from farm.agents.secrets import register_secret
from farm.checks.base import Judge
from farm.errors import SettingsError
from farm.fleet.digests import digest_of
from farm.fleet.replay import CallKey, RecordReplayAgent, RecordReplayJudge, ReplayStore
from farm.models import Assertion, Case, Message, RunResult, Turn
from farm.plan.fleet import ReplayMode
from farm.run.environment import RunEnvironment
from farm.run.execute import execute_run
from tests.support.servers import json_agent_server, openai_server

RUNS = 3


def judged_case(word: str) -> Case:
    """Two turns of the echo agent; the second is judged by an LLM judge."""
    judged = Assertion(type="agent", value=f'mentions "{word}"', has_value=True)
    return Case(id=f"case-{word}", format="yao", turns=[
        Turn(messages=[Message(content=f"hello {word}")], assertions=[Assertion(type="contains", value="hello",
                                                                                has_value=True)]),
        Turn(messages=[Message(content=f"say {word}")], assertions=[judged]),
    ])


def sweep(store: ReplayStore, agent_url: str, judge_url: str, case: Case) -> list[RunResult]:
    async def go() -> list[RunResult]:
        agent = RecordReplayAgent(create_http_agent(agent_url), store, digest_of({"url": "echo"}))
        connector = Connector(id="local.judge", model="echo", host=judge_url)
        judge: Judge = RecordReplayJudge(ConnectorJudge(connector), store, "local.judge", digest_of("echo"))
        try:
            return [await execute_run(case, run, agent, RunEnvironment(), judges=lambda use: judge)
                    for run in range(1, RUNS + 1)]
        finally:
            await agent.aclose()
            await connector.aclose()

    return asyncio.run(go())


def verdicts(results: list[RunResult]) -> list[str]:
    return [json.dumps(r.model_dump(mode="json", include={"run", "status", "output", "checks", "error"}),
                       sort_keys=True) for r in results]


def test_a_replayed_sweep_makes_no_call_and_gives_identical_verdicts(tmp_path: Path) -> None:
    case = judged_case(uuid.uuid4().hex[:6])
    with json_agent_server() as agent_server, openai_server() as judge_server:
        recorded = sweep(ReplayStore.open(tmp_path, ReplayMode.RECORD), agent_server.url + "/echo",
                         judge_server.url, case)
        agent_calls = sum(agent_server.server.hits.values())
        judge_calls = len(judge_server.server.requests)
    assert (agent_calls, judge_calls) == (2 * RUNS, RUNS)
    assert all(r.status == "passed" for r in recorded)
    files = sorted(p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*.json"))
    assert files == ["agent"] * (2 * RUNS) + ["judge"] * RUNS  # one per run, never one for all runs
    # the servers are gone: any call would be refused
    replayed = sweep(ReplayStore.open(tmp_path, ReplayMode.REPLAY), agent_server.url + "/echo",
                     judge_server.url, case)
    assert verdicts(replayed) == verdicts(recorded)


def test_a_call_the_record_lacks_is_an_error_naming_it(tmp_path: Path) -> None:
    store = ReplayStore.open(tmp_path, ReplayMode.REPLAY)
    [result] = sweep(store, "http://127.0.0.1:9/echo", "http://127.0.0.1:9", judged_case("x"))[:1]
    assert result.status == "error" and result.error is not None
    assert "no recording of the agent call of case 'case-x', run 1, turn 1" in result.error.message
    assert result.failure_class == "harness:replay"


def test_a_failed_call_is_recorded_and_replayed_as_the_same_failure(tmp_path: Path) -> None:
    case = judged_case("err")
    with json_agent_server() as server:
        failing = server.url + "/error?status=500"
        recorded = sweep(ReplayStore.open(tmp_path, ReplayMode.RECORD), failing, "http://127.0.0.1:9", case)
    replayed = sweep(ReplayStore.open(tmp_path, ReplayMode.REPLAY), failing, "http://127.0.0.1:9", case)
    assert recorded[0].status == "error" and recorded[0].error is not None
    assert verdicts(replayed) == verdicts(recorded)
    assert (replayed[0].error and replayed[0].error.kind, replayed[0].failure_class) == ("5xx", "infra:5xx")


def test_recordings_hold_no_secret(tmp_path: Path) -> None:
    secret = f"sk-{uuid.uuid4().hex}"
    register_secret(secret)
    store = ReplayStore.open(tmp_path, ReplayMode.RECORD)

    async def go(url: str) -> None:
        inner = create_http_agent(url + "/mirror")  # answers with the request it got, headers included
        inner.headers = {"Authorization": f"Bearer {secret}"}
        agent = RecordReplayAgent(inner, store, "cfg")
        case = Case(id="c", format="yao", turns=[Turn(messages=[Message(content=f"my key is {secret}")])])
        await execute_run(case, 1, agent, RunEnvironment())
        await agent.aclose()

    with json_agent_server() as server:
        asyncio.run(go(server.url))
    text = "".join(p.read_text() for p in tmp_path.rglob("*.json"))
    assert "my key is ***" in text and secret not in text


def test_keys_need_the_run_index_for_agent_calls() -> None:
    with pytest.raises(ValueError, match="run index"):
        CallKey("agent:a", "cfg", "c", 0, 1, "h")
    keys = {CallKey("agent:a", "cfg", "c", run, 1, "h").digest() for run in range(1, 51)}
    assert len(keys) == 50


def test_replaying_from_a_missing_directory_is_a_settings_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"--replay .*: no such directory"):
        ReplayStore.open(tmp_path / "none", ReplayMode.REPLAY)



def test_a_call_fleet_control_refused_is_not_recorded(tmp_path: Path) -> None:
    from farm.errors import BudgetExhaustedError

    store = ReplayStore.open(tmp_path, ReplayMode.RECORD)

    async def refused() -> str:
        raise BudgetExhaustedError("budget of $1 reached")

    with pytest.raises(BudgetExhaustedError):
        asyncio.run(store.call(CallKey("agent:a", "cfg", "c", 1, 1, "h"), {}, refused, str, str))
    assert not list(tmp_path.rglob("*.json"))  # a refused run is not counted, so nothing to replay
