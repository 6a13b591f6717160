"""The judge-verdict cache (SPEC 13): 50 identical outputs cost one judge call, in one process
(memory) and across processes (Redis); a failed judgment is not kept."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from collections.abc import Iterator
from typing import Any

import pytest

from farm.agents.connectors import Connector
from farm.agents.judge import ConnectorJudge
from farm.checks.base import JudgeVerdict
from farm.distributed.fleet.judge_cache import RedisVerdictCache
from farm.fleet.judge_cache import CachedJudge, MemoryVerdictCache, verdict_key
from tests.support.servers import openai_server

CRITERION = 'mentions "Paris"'


@pytest.fixture(params=["memory", pytest.param("redis", marks=[pytest.mark.redis, pytest.mark.slow])])
def cache_factory(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "memory":
        cache = MemoryVerdictCache()
        yield lambda: cache
        return
    request.getfixturevalue("redis_client")
    url = request.getfixturevalue("redis_server")
    yield lambda: RedisVerdictCache(url)


def judge_calls(served: Any) -> int:
    with served.server.lock:
        return sum(1 for r in served.server.requests if "judge" in json.dumps(r["body"]))


def test_fifty_identical_outputs_cost_one_judge_call(cache_factory: Any) -> None:
    async def fifty(url: str) -> list[JudgeVerdict]:
        connector = Connector(id="local.judge", model="echo", host=url)
        judge = CachedJudge(ConnectorJudge(connector), "local.judge:echo", cache_factory())
        outputs = ["The capital is Paris.", "The  capital is\nParis."] * 25  # the same once normalised
        verdicts = await asyncio.gather(*(judge.judge(criterion=CRITERION, actual=o, input="capital?")
                                          for o in outputs))
        await connector.aclose()
        return verdicts

    with openai_server() as served:
        verdicts = asyncio.run(fifty(served.url))
        assert judge_calls(served) == 1
    assert {v.verdict for v in verdicts} == {"pass"}


def test_other_criteria_inputs_outputs_or_judges_are_other_questions() -> None:
    base = verdict_key("j", CRITERION, "in", "out")
    assert base == verdict_key("j", CRITERION, "in", " out ")
    assert len({base, verdict_key("j2", CRITERION, "in", "out"), verdict_key("j", "other", "in", "out"),
                verdict_key("j", CRITERION, "in2", "out"), verdict_key("j", CRITERION, "in", "out2"),
                verdict_key("j", CRITERION, "in", {"a": 1}), verdict_key("j", CRITERION, "in", '{"a":1}')}) == 7
    assert verdict_key("j", CRITERION, {"b": 1, "a": 2}, {"x": 1.0}) == verdict_key("j", CRITERION, {"a": 2, "b": 1},
                                                                                     {"x": 1})


class FlakyJudge:
    """``first`` (a failed call, or no decision) the first time, then a pass; counts its calls."""

    def __init__(self, first: JudgeVerdict) -> None:
        self.first = first
        self.calls = 0

    async def judge(self, *, criterion: str, actual: Any, input: Any) -> JudgeVerdict:
        self.calls += 1
        await asyncio.sleep(0.05)
        return self.first if self.calls == 1 else JudgeVerdict("pass", "ok")


@pytest.mark.parametrize("first", [JudgeVerdict("error", "judge error: timeout"),
                                   JudgeVerdict("equivocal", "the judge did not answer pass or fail")])
def test_an_error_or_equivocal_verdict_is_not_kept_and_waiters_ask_again(cache_factory: Any,
                                                                         first: JudgeVerdict) -> None:
    async def scenario() -> tuple[list[str], int]:
        inner = FlakyJudge(first)
        judge = CachedJudge(inner, "flaky", cache_factory())
        verdicts = await asyncio.gather(*(judge.judge(criterion="c", actual="o", input=None) for _ in range(5)))
        return [v.verdict for v in verdicts], inner.calls

    verdicts, calls = asyncio.run(scenario())
    assert sorted(verdicts) == sorted([first.verdict, "pass", "pass", "pass", "pass"]) and calls == 2


def _ask_in_a_process(url: str, server: str, results: Any) -> None:
    async def ask() -> str:
        connector = Connector(id="local.judge", model="echo", host=server)
        judge = CachedJudge(ConnectorJudge(connector), "local.judge:echo", RedisVerdictCache(url))
        verdicts = await asyncio.gather(*(judge.judge(criterion=CRITERION, actual="Paris it is", input=None)
                                          for _ in range(10)))
        await connector.aclose()
        return ",".join(sorted({v.verdict for v in verdicts}))

    results.put(asyncio.run(ask()))


@pytest.mark.redis
def test_workers_share_verdicts_through_redis(redis_server: str, redis_client: Any) -> None:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    with openai_server() as served:
        processes = [context.Process(target=_ask_in_a_process, args=(redis_server, served.url, results))
                     for _ in range(3)]
        for process in processes:
            process.start()
        answers = [results.get(timeout=120) for _ in processes]
        for process in processes:
            process.join(timeout=60)
        assert judge_calls(served) == 1
    assert answers == ["pass"] * 3
    assert all(name.startswith("farm:judge-cache:") and "Paris" not in name for name in redis_client.keys("*"))
