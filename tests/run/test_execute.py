"""``execute_run``: conversation rules, sly_data carry-over, timeouts, outcomes as data."""

from __future__ import annotations

import asyncio
from typing import Any

from farm.agents.base import AgentRequest
from farm.agents.python import PythonAgent
from farm.errors import AgentError
from farm.models import Assertion, Case, Message, Reply, RunResult, RunStatus, Turn
from farm.run.environment import RunEnvironment
from farm.run.execute import execute_run


class RecordingAgent:
    """A real Agent that answers from a script and keeps every request it got."""

    id = "recording"

    def __init__(self, replies: list[Reply] | None = None) -> None:
        self.requests: list[AgentRequest] = []
        self._replies = replies or []

    async def respond(self, request: AgentRequest) -> Reply:
        self.requests.append(request)
        index = len(self.requests) - 1
        return self._replies[index] if index < len(self._replies) else Reply(text=f"answer {index + 1}")

    async def aclose(self) -> None:
        return None


def turn(text: str, **kwargs: Any) -> Turn:
    return Turn(messages=[Message(role="user", content=text)], **kwargs)


def case(*turns: Turn, **kwargs: Any) -> Case:
    return Case(id=kwargs.pop("id", "c"), format="neuro-san", turns=list(turns), **kwargs)


def run(c: Case, agent: Any, env: RunEnvironment | None = None, run_index: int = 1) -> RunResult:
    return asyncio.run(execute_run(c, run_index, agent, env or RunEnvironment()))


def test_turns_share_one_conversation() -> None:
    agent = RecordingAgent()
    result = run(case(turn("one"), turn("two"), turn("three")), agent)
    assert result.status is RunStatus.PASSED and result.turns_completed == 3
    third = agent.requests[2]
    assert [m["content"] for m in third.messages] == ["one", "answer 1", "two", "answer 2", "three"]
    assert [m["content"] for m in third.new_messages] == ["three"]
    assert len({r.context.chat_id for r in agent.requests}) == 1
    assert agent.requests[0].conversation is agent.requests[2].conversation
    assert result.output == "answer 3"


def test_continue_conversation_false_makes_the_next_turn_fresh() -> None:
    agent = RecordingAgent([Reply(text="a", sly_data={"k": 1}), Reply(text="b"), Reply(text="c")])
    run(case(turn("one"), turn("two", continue_conversation=False), turn("three")), agent)
    first, second, third = agent.requests
    assert first.context.chat_id == second.context.chat_id != third.context.chat_id
    assert [m["content"] for m in third.messages] == ["three"]
    assert second.sly_data == {"k": 1} and third.sly_data is None


def test_returned_sly_data_merges_into_the_next_turn() -> None:
    agent = RecordingAgent([Reply(text="a", sly_data={"token": "t1", "x": 1}), Reply(text="b")])
    run(case(turn("one", sly_data={"x": 0, "y": 2}), turn("two", sly_data={"z": 3})), agent)
    assert agent.requests[0].sly_data == {"x": 0, "y": 2}
    assert agent.requests[0].context.sly_data == {"x": 0, "y": 2}
    assert agent.requests[1].sly_data == {"x": 1, "y": 2, "token": "t1", "z": 3}


def test_every_run_starts_from_a_fresh_copy() -> None:
    agent = RecordingAgent([Reply(text="a", sly_data={"seen": True})] * 4)
    c = case(turn("one", sly_data={"n": 1}), turn("two"))
    run(c, agent, run_index=1)
    run(c, agent, run_index=2)
    assert agent.requests[2].sly_data == {"n": 1}
    assert agent.requests[2].context.run == 2
    assert c.turns[0].sly_data == {"n": 1}
    assert agent.requests[0].context.chat_id != agent.requests[2].context.chat_id


def test_environment_priority_and_context_fields() -> None:
    agent = RecordingAgent()
    c = case(turn("x"), user="case-user", metadata={"tier": "gold"})
    run(c, agent, RunEnvironment(team="flag-team", connector="openai.x"))
    ctx = agent.requests[0].context
    assert (ctx.user_id, ctx.team_id) == ("case-user", "flag-team")
    assert ctx.metadata == {"tier": "gold"} and ctx.connector == "openai.x" and ctx.case_id == "c"
    run(c, agent, RunEnvironment(user="flag-user"))
    assert agent.requests[1].context.user_id == "flag-user"


def test_checks_fail_the_run_but_all_turns_run() -> None:
    agent = RecordingAgent([Reply(text="wrong"), Reply(text="right")])
    c = case(
        turn("one", assertions=[Assertion(type="contains", value="right", has_value=True)]),
        turn("two", assertions=[Assertion(type="contains", value="right", has_value=True)]),
    )
    result = run(c, agent)
    assert result.status is RunStatus.FAILED
    assert [(o.turn, o.passed) for o in result.checks] == [(1, False), (2, True)]


def test_turn_timeout_and_case_timeout() -> None:
    async def slow(messages: list[dict]) -> str:
        await asyncio.sleep(5)
        return "late"

    agent = PythonAgent(slow, "slow")
    result = run(case(turn("x", timeout_s=0.2)), agent)
    assert result.status is RunStatus.TIMEOUT and "turn 1" in result.error.message  # type: ignore[union-attr]
    result = run(case(turn("x"), timeout_s=0.2), agent)
    assert result.status is RunStatus.TIMEOUT and "run timed out after 0.2s" in result.error.message  # type: ignore[union-attr]
    assert result.duration_ms < 5000


def test_hung_sync_agent_is_abandoned_on_time() -> None:
    import time

    agent = PythonAgent(lambda messages: time.sleep(30), "hung")
    result = run(case(turn("x"), timeout_s=0.3), agent)
    assert result.status is RunStatus.TIMEOUT and result.duration_ms < 10_000


def test_agent_errors_are_data() -> None:
    class Failing(RecordingAgent):
        async def respond(self, request: AgentRequest) -> Reply:
            raise AgentError("HTTP 500 from agent", retries=2)

    result = run(case(turn("x")), Failing())
    assert result.status is RunStatus.ERROR and result.error is not None
    assert result.error.message == "HTTP 500 from agent" and result.retries == 2

    def boom(messages: list[dict]) -> str:
        raise ValueError("bad")

    result = run(case(turn("x")), PythonAgent(boom, "boom"))
    assert result.status is RunStatus.ERROR and result.error.type == "ValueError"  # type: ignore[union-attr]
    assert "bad" in (result.error.traceback or "")  # type: ignore[union-attr]


def test_skipped_case_is_not_run() -> None:
    agent = RecordingAgent()
    result = run(case(turn("x"), skip=True), agent)
    assert result.status is RunStatus.SKIPPED and agent.requests == []


def test_results_round_trip_through_json() -> None:
    agent = RecordingAgent([Reply(text="a", usage={"prompt_tokens": 3, "completion_tokens": 1}),
                            Reply(structure={"k": [1, 2]}, usage={"input_tokens": 4, "output_tokens": 2})])
    result = run(case(turn("one"), turn("two")), agent)
    assert result.usage == {"input_tokens": 7, "output_tokens": 3}
    assert RunResult.model_validate_json(result.model_dump_json()) == result


def test_usage_is_kept_per_turn_and_summed_and_a_reported_cost_only_when_every_turn_reports_one() -> None:
    openai = {"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 4},
              "completion_tokens_details": {"reasoning_tokens": 2}}
    agent = RecordingAgent([Reply(text="a", usage={**openai, "cost": 0.25}), Reply(text="b"),
                            Reply(text="c", usage={"input_tokens": 1, "output_tokens": 1, "cost_usd": 0.5})])
    result = run(case(turn("one"), turn("two"), turn("three")), agent)
    assert result.turn_usage == [{"input_tokens": 10, "output_tokens": 5, "cached_tokens": 4, "reasoning_tokens": 2},
                                 {}, {"input_tokens": 1, "output_tokens": 1}]
    assert result.usage == {"input_tokens": 11, "output_tokens": 6, "cached_tokens": 4, "reasoning_tokens": 2}
    assert result.cost_usd is None  # the second turn reported no cost: the sum is unknown, never $0.75
    priced = run(case(turn("one")), RecordingAgent([Reply(text="a", usage={**openai, "cost": 0.25})]))
    assert priced.cost_usd == 0.25
    silent = run(case(turn("one")), RecordingAgent([Reply(text="a")]))
    assert silent.usage is None and silent.turn_usage is None and silent.cost_usd is None


def test_sync_agent_threads_are_reused_and_a_hung_one_leaves_the_pool() -> None:
    import threading
    import time

    seen: list[int] = []

    def record(messages: list[dict]) -> str:
        seen.append(threading.get_ident())
        return "ok"

    agent = PythonAgent(record, "record")
    for i in range(1, 21):
        assert run(case(turn("x")), agent, run_index=i).status is RunStatus.PASSED
    assert threading.get_ident() not in seen  # the calls ran off the event loop's thread
    assert len(set(seen)) < len(seen)  # sequential calls share pooled threads

    hung_in: list[int] = []

    def hang(messages: list[dict]) -> str:
        hung_in.append(threading.get_ident())
        time.sleep(30)
        return "late"

    result = run(case(turn("x"), timeout_s=0.2), PythonAgent(hang, "hung"))
    assert result.status is RunStatus.TIMEOUT
    seen.clear()
    for i in range(1, 11):  # later calls never wait for the hung thread, nor land on it
        assert run(case(turn("x")), agent, run_index=i).status is RunStatus.PASSED
    assert hung_in[0] not in seen


def test_concurrent_sync_calls_run_side_by_side() -> None:
    import threading

    barrier = threading.Barrier(8, timeout=20)

    def meet(messages: list[dict]) -> str:
        barrier.wait()  # only returns once 8 calls are in flight at once
        return "met"

    agent = PythonAgent(meet, "meet")

    async def eight() -> list[RunResult]:
        env = RunEnvironment()
        return list(await asyncio.gather(*(execute_run(case(turn("x")), i, agent, env) for i in range(1, 9))))

    assert [r.status for r in asyncio.run(eight())] == [RunStatus.PASSED] * 8


def test_a_hung_sync_agent_does_not_keep_the_process_alive(tmp_path: Any) -> None:
    import subprocess
    import sys

    script = tmp_path / "hang.py"
    script.write_text(
        "import asyncio, time\n"
        "from farm.agents.python import PythonAgent\n"
        "from farm.run.environment import RunEnvironment\n"
        "from farm.run.execute import execute_run\n"
        "from farm.models import Case, Message, Turn\n"
        "c = Case(id='c', format='neuro-san', timeout_s=0.2,\n"
        "         turns=[Turn(messages=[Message(role='user', content='x')])])\n"
        "agent = PythonAgent(lambda messages: time.sleep(3600), 'hung')\n"
        "print(asyncio.run(execute_run(c, 1, agent, RunEnvironment())).status)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=_this_farm())
    assert done.returncode == 0, done.stderr
    assert "timeout" in done.stdout


def test_checks_past_the_deadline_time_out(tmp_path: Any) -> None:
    (tmp_path / "slow.py").write_text(
        "import asyncio\nasync def check(output, input, expected):\n    await asyncio.sleep(30)\n    return True\n"
    )
    c = case(turn("x", assertions=[Assertion(type="script", script="slow.py:check")]),
             timeout_s=0.3, base_dir=str(tmp_path))
    result = run(c, RecordingAgent())
    assert result.status is RunStatus.TIMEOUT
    assert result.error is not None and result.error.message == "checks of turn 1 timed out"
    assert result.turns_completed == 1


def test_sync_agents_work_in_a_forked_child(tmp_path: Any) -> None:
    # a prefork worker forks after the parent may have used (and idled) pooled threads
    import subprocess
    import sys

    script = tmp_path / "fork.py"
    script.write_text(
        "import asyncio, os\n"
        "from farm.agents.python import PythonAgent\n"
        "from farm.run.environment import RunEnvironment\n"
        "from farm.run.execute import execute_run\n"
        "from farm.models import Case, Message, Turn\n"
        "c = Case(id='c', format='neuro-san', timeout_s=5,\n"
        "         turns=[Turn(messages=[Message(role='user', content='x')])])\n"
        "agent = PythonAgent(lambda messages: 'ok', 'ok')\n"
        "print('parent', asyncio.run(execute_run(c, 1, agent, RunEnvironment())).status, flush=True)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    print('child', asyncio.run(execute_run(c, 1, agent, RunEnvironment())).status, flush=True)\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
    )
    done = subprocess.run([sys.executable, "-W", "ignore", str(script)], capture_output=True, text=True, timeout=120,
                          env=_this_farm())
    assert done.returncode == 0, done.stderr
    assert "parent passed" in done.stdout and "child passed" in done.stdout, done.stdout


def test_a_run_records_when_it_started_in_utc_to_the_millisecond() -> None:
    from datetime import UTC, datetime, timedelta

    before = datetime.now(UTC)
    results = [asyncio.run(execute_run(case(turn("hi")), n, RecordingAgent(), RunEnvironment())) for n in (1, 2)]
    after = datetime.now(UTC)
    for result in results:
        assert result.started_at is not None and len(result.started_at) == len("2026-11-22T10:15:00.123Z")
        started = datetime.strptime(result.started_at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert before - timedelta(milliseconds=1) <= started <= after


def _this_farm() -> dict[str, str]:
    """The environment of a script that imports this checkout's farm (not another installed one)."""
    import os
    from pathlib import Path

    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def test_chat_ids_are_new_for_every_run_across_reads_and_forks() -> None:
    """Chat ids are read from the OS in blocks: every run's differs from the others' past a block's
    end, and a forked child (a prefork worker) gives none of the ids its parent would give next."""
    import os
    import re

    agent = RecordingAgent()
    for index in range(300):  # more than a block of ids
        run(case(turn("hi")), agent, run_index=index + 1)
    ids = [r.context.chat_id for r in agent.requests]
    assert len(set(ids)) == 300 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child's next ids, to the parent; it never goes back into pytest
        try:
            from farm.run.execute import _new_chat_id

            os.write(write, " ".join(_new_chat_id() for _ in range(10)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        from_child = set(pipe.read().split())
    os.waitpid(child, 0)
    for index in range(10):
        run(case(turn("hi")), agent, run_index=index + 1)
    from_parent = {r.context.chat_id for r in agent.requests[300:]}
    assert len(from_child) == 10 and len(from_parent) == 10 and not from_child & from_parent
