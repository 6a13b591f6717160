"""``--budget`` / ``--max-tokens`` (SPEC 13): reservations, settlement, the stop, on both backends;
and the whole seam (``FleetLimiter``) against the bundled OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import random
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from farm.agents.base import AgentRequest
from farm.checks.base import JudgeVerdict
from farm.distributed.fleet.budget import RedisBudgetBackend
from farm.errors import BudgetExhaustedError, SettingsError
from farm.fleet.budget import Budget, LocalBudgetBackend
from farm.fleet.control import JUDGE, FleetLimiter, FleetScope, JudgeRole, Refusal, UsageMeter, fleet_scope
from farm.fleet.limiter import RateLimiter
from farm.fleet.local_rates import LocalRateBackend
from farm.models import Case, Message, Reply, Turn
from farm.models.usage import Usage
from farm.plan.fleet import BudgetLimit, parse_budget
from farm.plan.rate_specs import LimitTable, parse_limit
from farm.run.environment import RunEnvironment
from farm.run.execute import execute_run
from farm.stats.prices import Price
from tests.support.servers import openai_server


@pytest.fixture(params=["local", pytest.param("redis", marks=[pytest.mark.redis, pytest.mark.slow])])
def backend(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "local":
        yield LocalBudgetBackend()
        return
    request.getfixturevalue("redis_client")
    yield RedisBudgetBackend(request.getfixturevalue("redis_server"))


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_reservations_are_refused_past_the_budget_and_the_stop_latches(backend: Any) -> None:
    async def scenario() -> None:
        budget = Budget(backend, "s1", BudgetLimit(max_usd=1.0))
        first = await budget.reserve(0.6, 10)
        with pytest.raises(BudgetExhaustedError, match=r"budget of \$1 reached"):
            await budget.reserve(0.5, 10)
        await budget.settle(first, 0.1, 5)  # room again, but the sweep has stopped
        with pytest.raises(BudgetExhaustedError):
            await budget.reserve(0.01, 1)
        state = await budget.state()
        assert (state.spent_usd, state.reserved_usd, state.spent_tokens, state.reserved_tokens) == (
            pytest.approx(0.1), pytest.approx(0.0), 5, 0)
        assert state.exhausted
        other = Budget(backend, "s2", BudgetLimit(max_usd=1.0))  # budgets are per sweep
        await other.reserve(0.9, 0)

    run(scenario())


def test_a_token_budget_and_unknown_costs_keep_the_reservation_spent(backend: Any) -> None:
    async def scenario() -> None:
        budget = Budget(backend, "t", BudgetLimit(max_tokens=100))
        reservation = await budget.reserve(0.0, 60)
        await budget.settle(reservation, None, None)  # the call's usage is unknown
        state = await budget.state()
        assert (state.spent_tokens, state.reserved_tokens) == (60, 0)
        await budget.reserve(0.0, 40)  # exactly the budget: admitted
        with pytest.raises(BudgetExhaustedError, match="100 tokens"):
            await budget.reserve(0.0, 1)

    run(scenario())


@pytest.mark.parametrize(
    ("usd", "tokens", "message"),
    [(0, None, "--budget"), (-1.0, None, "--budget"), (float("nan"), None, "--budget"), (None, 0, "--max-tokens")],
)
def test_bad_budget_flags(usd: float | None, tokens: int | None, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        parse_budget(usd, tokens)
    assert parse_budget(2.5, 1000) == BudgetLimit(2.5, 1000)


def _reserve_many(url: str, seed: int, results: Any) -> None:
    async def many() -> list[float]:
        budget = Budget(RedisBudgetBackend(url), "shared", BudgetLimit(max_usd=5.0))
        rng, taken = random.Random(seed), []
        for _ in range(400):
            usd = rng.uniform(0.001, 0.05)
            try:
                await budget.reserve(usd, 0)
            except BudgetExhaustedError:
                break
            taken.append(usd)
        return taken

    results.put(json.dumps(asyncio.run(many())))


@pytest.mark.redis
def test_workers_racing_for_one_budget_never_take_more_than_it_holds(redis_server: str, redis_client: Any) -> None:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    processes = [context.Process(target=_reserve_many, args=(redis_server, seed, results)) for seed in range(4)]
    for process in processes:
        process.start()
    taken = [usd for _ in processes for usd in json.loads(results.get(timeout=120))]
    for process in processes:
        process.join(timeout=60)
    state = asyncio.run(RedisBudgetBackend(redis_server).state("shared"))
    assert sum(taken) == pytest.approx(state.reserved_usd)
    assert 5.0 - 0.05 < state.reserved_usd <= 5.0  # full up to the last call that would not fit


# ---------------------------------------------------------------- the seam, against a real server


async def _chat(session: aiohttp.ClientSession, limiter: FleetLimiter, url: str, key: str, words: int) -> Usage:
    """One call the way the transport makes it: acquire with an estimate, post, release."""
    content = " ".join(["word"] * words)
    lease = await limiter.acquire(key, tokens=2 * words + 5)  # input estimate + max_tokens (the echo)
    status, usage = None, None
    try:
        body = {"model": "echo", "messages": [{"role": "user", "content": content}]}
        async with session.post(f"{url}/v1/chat/completions", json=body) as response:
            status, usage = response.status, (await response.json())["usage"]
    finally:
        await lease.release(status=status, retry_after_s=None, usage=usage)
    return Usage(usage["prompt_tokens"], usage["completion_tokens"])


PRICE = Price(input=1000.0, output=1000.0)
"""$0.001 a token: a 21-token call costs $0.021."""


def _price_of(key: str) -> Price | None:
    return PRICE if key == "local.echo" else None


def test_a_budgeted_sweep_stops_within_its_budget_against_the_bundled_server() -> None:
    async def sweep(url: str) -> tuple[float, int, int]:
        budget = Budget(LocalBudgetBackend(), "sweep", BudgetLimit(max_usd=1.0))
        limiter = FleetLimiter(RateLimiter(LocalRateBackend(), LimitTable()), _price_of)
        made, refused = 0, 0

        async def caller() -> None:
            nonlocal made, refused
            with fleet_scope(FleetScope(budget=budget)):
                while True:
                    try:
                        await _chat(session, limiter, url, "local.echo", 10)
                    except BudgetExhaustedError:
                        refused += 1
                        return
                    made += 1

        async with aiohttp.ClientSession() as session:
            await asyncio.gather(*(caller() for _ in range(8)))
        return (await budget.state()).spent_usd, made, refused

    with openai_server() as served:
        spent, made, refused = asyncio.run(sweep(served.url))
        calls = served.hits("word word word word word word word word word word")
    assert refused == 8 and calls == made
    assert spent == pytest.approx(made * 20 * 0.001)  # each call: 10 in, 10 out
    assert 1.0 - 0.025 * 8 < spent <= 1.0  # honest estimates: never over; stopped within a round


class UnpricedJudge:
    """A judge making one call through the limiter, on a key with no known price."""

    def __init__(self, limiter: FleetLimiter, session: aiohttp.ClientSession, url: str) -> None:
        self.limiter, self.session, self.url = limiter, session, url

    async def judge(self, *, criterion: str, actual: Any, input: Any) -> JudgeVerdict:
        await _chat(self.session, self.limiter, self.url, "judge.unpriced", 2)
        return JudgeVerdict("pass")


def test_the_meter_counts_agent_and_judge_usage_apart() -> None:
    async def calls(url: str) -> UsageMeter:
        meter = UsageMeter()
        limiter = FleetLimiter(None, _price_of)
        async with aiohttp.ClientSession() as session:
            with fleet_scope(FleetScope(meter=meter)):
                await _chat(session, limiter, url, "local.echo", 3)
                await JudgeRole(UnpricedJudge(limiter, session, url)).judge(criterion="c", actual="a", input=None)
        return meter

    with openai_server() as served:
        meter = asyncio.run(calls(served.url))
    assert meter.totals("agent").to_dict() == {"usage": {"input_tokens": 3, "output_tokens": 3},
                                               "cost_usd": pytest.approx(0.006)}
    assert meter.totals(JUDGE).to_dict() == {"usage": {"input_tokens": 2, "output_tokens": 2}, "cost_usd": None}


def test_a_call_refused_by_the_rate_limiter_gives_its_reservation_back() -> None:
    async def scenario() -> tuple[float, float, int]:
        budget = Budget(LocalBudgetBackend(), "s", BudgetLimit(max_usd=10.0))
        table = LimitTable({"local.echo": parse_limit("1conc", where="t")})
        limiter = FleetLimiter(RateLimiter(LocalRateBackend(), table), _price_of)
        with fleet_scope(FleetScope(budget=budget)):
            held = await limiter.acquire("local.echo", tokens=100)
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.1):
                    await limiter.acquire("local.echo", tokens=100)  # waits for the cap: cancelled
            reserved_while_held = (await budget.state()).reserved_usd
            await held.release(status=200, retry_after_s=None, usage={"prompt_tokens": 10, "completion_tokens": 5})
        state = await budget.state()
        return reserved_while_held, state.reserved_usd, state.spent_tokens

    assert run(scenario()) == (pytest.approx(0.1), pytest.approx(0.0), 15)



class LimitedEchoAgent:
    """An agent whose every HTTP call goes through the limiter, as the transport's calls will."""

    id = "local.echo"

    def __init__(self, limiter: FleetLimiter, url: str) -> None:
        self.limiter, self.url = limiter, url

    async def respond(self, request: AgentRequest) -> Reply:
        words = len(str(request.messages[-1]["content"]).split())
        async with aiohttp.ClientSession() as session:
            await _chat(session, self.limiter, self.url, self.id, words)
        return Reply(text=str(request.messages[-1]["content"]))

    async def aclose(self) -> None:
        return None


def test_a_refused_call_is_noted_for_the_executor_whatever_catches_the_error() -> None:
    case = Case(id="c", format="yao", turns=[Turn(messages=[Message(content="one two three")])])

    async def runs(url: str) -> list[tuple[str, BudgetExhaustedError | None]]:
        budget = Budget(LocalBudgetBackend(), "s", BudgetLimit(max_usd=0.012))  # reserves $0.011, spends $0.006
        agent = LimitedEchoAgent(FleetLimiter(None, _price_of), url)
        out = []
        for run_index in (1, 2):
            refusal = Refusal()
            with fleet_scope(FleetScope(budget=budget, refusal=refusal)):
                result = await execute_run(case, run_index, agent, RunEnvironment())
            assert refusal.error is None or isinstance(refusal.error, BudgetExhaustedError)
            out.append((result.status, refusal.error))
        return out

    with openai_server() as served:
        (first, first_refusal), (second, second_refusal) = asyncio.run(runs(served.url))
    assert (first, first_refusal) == ("passed", None)
    assert second == "error" and second_refusal is not None and second_refusal.stopped == "budget"
