"""Every adapter passes the same behavioural set through ``execute_run`` and a real peer.

Behaviours: a multi-turn conversation, sly_data sent and returned, a turn cut off by its
timeout, transient faults retried (where the transport has them), and a crash recorded as a
run ``error``. Peers: the example servers on 127.0.0.1 (farm HTTP protocol, neuro-san
streaming, OpenAI-compatible chat) and a real program for ``cmd:``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.agents.resolve import create_agent, parse_reference
from farm.models import Case, Message, RunResult, RunStatus, StockTest, Turn
from farm.run.environment import RunEnvironment
from farm.run.execute import execute_run
from tests.support.servers import json_agent_server, load_example, openai_server, serve_in_thread

HERE = Path(__file__).resolve().parents[1]
CMD_AGENT = HERE / "agents" / "cmd_agent.py"
PY_AGENT = HERE / "agents" / "conformance.py"


@dataclass
class Peer:
    """How one adapter expresses each behaviour: a reference per behaviour, None when N/A."""

    name: str
    conversation: str
    sly: str | None
    slow: str
    flaky: str | None
    crash: str
    options: AgentOptions


def text_test(*keywords: str) -> list[StockTest]:
    return [StockTest(target="text", test="keywords", values=list(keywords))]


def turn(text: str, **kw) -> Turn:
    return Turn(messages=[Message(role="user", content=text)], **kw)


def run_case(peer: Peer, ref: str, *turns: Turn, timeout_s: float | None = None) -> RunResult:
    agent_ref = parse_reference(ref, peer.options)
    case = Case(id=f"{peer.name}-case", format="neuro-san", turns=list(turns), timeout_s=timeout_s)

    async def go() -> RunResult:
        agent = create_agent(agent_ref, peer.options)
        try:
            return await execute_run(case, 1, agent, RunEnvironment())
        finally:
            await agent.aclose()

    return asyncio.run(go())


def _options(tmp: Path, openai_url: str | None = None) -> AgentOptions:
    if openai_url:
        conn = tmp / "connectors" / "local"
        conn.mkdir(parents=True, exist_ok=True)
        for model in ("echo", "slow-5s", "fail-503-then-ok", "crash"):
            (conn / f"{model}.conn.yao").write_text(json.dumps(
                {"type": "openai", "options": {"model": model, "host": openai_url}}))
        for model in ("echo", "slow-5s", "fail-503-then-ok", "crash"):
            agent = tmp / "assistants" / model.replace("-", "_")
            agent.mkdir(parents=True, exist_ok=True)
            (agent / "package.yao").write_text(json.dumps({"type": "prompt", "connector": f"local.{model}"}))
            (agent / "prompts.yml").write_text("- role: system\n  content: You repeat what you are told.\n")
    return AgentOptions.from_env(tmp, agents_root=str(tmp / "assistants"), connectors_root=str(tmp / "connectors"))


@pytest.fixture(scope="module", params=["python", "http", "neuro-san", pytest.param("command", marks=pytest.mark.slow),
                                        "prompt"])
def peer(request, tmp_path_factory) -> Iterator[Peer]:
    tmp = tmp_path_factory.mktemp(request.param)
    with ExitStack() as stack:
        if request.param == "python":
            py = f"py:{PY_AGENT}"
            yield Peer("python", f"{py}:memory", f"{py}:sly", f"{py}:slow", None, f"{py}:crash", _options(tmp))
        elif request.param == "http":
            url = stack.enter_context(json_agent_server()).url
            yield Peer("http", f"{url}/echo", f"{url}/echo", f"{url}/slow?s=5",
                       f"{url}/flaky?status=503&n=1&retry_after=0&key=conformance", f"{url}/crash", _options(tmp))
        elif request.param == "neuro-san":
            module = load_example("neuro_san_server")
            served = stack.enter_context(serve_in_thread(module.NeuroSanServer(("127.0.0.1", 0), flaky_failures=1)))
            base = served.url.replace("http://", "neuro-san://")
            yield Peer("neuro-san", f"{base}/memory", f"{base}/math_guy", f"{base}/slow", f"{base}/flaky",
                       f"{base}/crash", _options(tmp))
        elif request.param == "command":
            cmd = f"cmd:{sys.executable} {CMD_AGENT}"
            yield Peer("command", f"{cmd} memory", f"{cmd} sly", f"{cmd} slow", None, f"{cmd} crash", _options(tmp))
        else:
            url = stack.enter_context(openai_server()).url
            yield Peer("prompt", "echo", None, "slow_5s", "fail_503_then_ok", "crash", _options(tmp, url))


def test_multi_turn_conversation(peer: Peer) -> None:
    remembers = peer.name in ("neuro-san", "python", "command")  # these answer from the remembered turns
    second = turn("bravo", stock_tests=text_test("turn 2", "alpha") if remembers else text_test("bravo"))
    if peer.name == "http":  # the farm's HTTP protocol resends the history: the echo counts it
        second.stock_tests.append(StockTest(target="sly_data", key=["turns"], test="value", values=[2]))
    result = run_case(peer, peer.conversation, turn("alpha"), second)
    assert result.status is RunStatus.PASSED, (result.error, [c.message for c in result.failed_checks])
    assert result.turns_completed == 2


def test_sly_data_round_trip(peer: Peer) -> None:
    if peer.sly is None:
        pytest.skip(f"{peer.name} agents have no sly_data channel")
    first = turn("times", sly_data={"x": 6, "y": 7})
    second = turn("times", stock_tests=[StockTest(target="sly_data", key=["equals"], test="value", values=[42])])
    if peer.name == "http":
        first = turn("one", sly_data={"x": 6})
        second = turn("two", stock_tests=[StockTest(target="sly_data", key=["x"], test="value", values=[6]),
                                          StockTest(target="sly_data", key=["turns"], test="value", values=[2])])
    result = run_case(peer, peer.sly, first, second)
    assert result.status is RunStatus.PASSED, (result.error, [c.message for c in result.failed_checks])


def test_turn_timeout_cuts_the_agent_off(peer: Peer) -> None:
    result = run_case(peer, peer.slow, turn("wait", timeout_s=0.5))
    assert result.status is RunStatus.TIMEOUT, result.error
    assert result.duration_ms < 4500


def test_transient_fault_is_retried(peer: Peer) -> None:
    if peer.flaky is None:
        pytest.skip(f"{peer.name} agents have no transient transport faults")
    result = run_case(peer, peer.flaky, turn("retry me"))
    assert result.status is RunStatus.PASSED, result.error
    assert result.retries >= 1


def test_crash_is_a_run_error(peer: Peer) -> None:
    result = run_case(peer, peer.crash, turn("crash now"))
    assert result.status is RunStatus.ERROR and result.error is not None
    assert result.error.message


def test_agent_ref_round_trips(peer: Peer) -> None:
    ref = parse_reference(peer.conversation, peer.options)
    assert TypeAdapter(AgentRef).validate_json(TypeAdapter(AgentRef).dump_json(ref)) == ref
