"""Scale a per-run basis to a planned sweep: calls, tokens, cost and wall time (pure).

Calls come from the plan itself: an agent call per turn of every run, and a judge call per judged
check (an upper bound: the judge cache answers repeated outputs without a call), K − 1 more under
``--confirm-failures K`` (again at most: only a failing first verdict is asked again, never from
the cache); their cost, at the basis's judge cost, is counted in full too. Tokens and cost
are the basis's per-run figures times the planned runs. Wall time: the runs' time spread over the
lanes running at once (``--parallel`` per worker, times the workers), and never under what the
rate limits allow (calls per second, tokens per second; a concurrency limit caps the lanes).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from farm.checks import JUDGED_ASSERTIONS, JUDGED_STOCK_TESTS
from farm.estimate.spend import PerRun
from farm.plan.rate_specs import RateLimit


@dataclass(frozen=True)
class PlannedCalls:
    runs: int
    agent_calls: int
    judge_calls: int
    by_key: dict[str, int]
    """Agent calls by rate-limit key."""
    confirm_calls: int = 0
    """Of ``judge_calls``, the ``--confirm-failures`` repeats (at most)."""
    confirm_failures: int = 1


def case_calls(case: Any) -> tuple[int, int]:
    """(agent calls, judge calls) of one run of ``case``: a call per turn, one per judged check."""
    judged = sum(sum(a.type in JUDGED_ASSERTIONS for a in t.assertions) +
                 sum(s.test in JUDGED_STOCK_TESTS for s in t.stock_tests) for t in case.turns)
    return max(len(case.turns), 1), judged


def plan_calls(cases: Iterable[Any], key_of: Any, confirm_failures: int = 1) -> PlannedCalls:
    """Calls the planned cases (``PlannedCase``) will make; ``key_of(planned)``: its rate-limit key;
    ``confirm_failures``: the K of ``--confirm-failures`` (each judged check asked up to K times)."""
    runs = agent = judge = 0
    by_key: dict[str, int] = {}
    for planned in cases:
        if planned.case.skip:
            continue
        per_agent, per_judge = case_calls(planned.case)
        n = planned.plan.runs
        runs, agent, judge = runs + n, agent + n * per_agent, judge + n * per_judge
        key = key_of(planned)
        by_key[key] = by_key.get(key, 0) + n * per_agent
    repeats = judge * (confirm_failures - 1)
    return PlannedCalls(runs, agent, judge + repeats, by_key, repeats, confirm_failures)


@dataclass(frozen=True)
class Forecast:
    runs: int
    agent_calls: int
    judge_calls: int
    tokens: int | None
    cost_usd: float | None
    wall_s: float
    lanes: int
    limited_by: str | None
    """The rate limit that sets the wall time, when one does."""
    confirm_calls: int = 0
    """Of ``judge_calls``, the ``--confirm-failures`` repeats: at most, every judged check failing first."""
    confirm_cost_usd: float | None = None
    """Of ``cost_usd``, those repeats' cost (at most)."""

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _total(per_run: float | None, runs: int) -> float | None:
    return None if per_run is None else per_run * runs


def _sum(*parts: float | None) -> float | None:
    known = [p for p in parts if p is not None]
    return sum(known) if known else None


def _floor(calls: PlannedCalls, tokens: float | None, limits: Sequence[tuple[str, RateLimit]]
           ) -> tuple[float, str | None]:
    """The shortest wall the rate limits allow, and the limit that sets it."""
    worst, why = 0.0, None
    share = (tokens or 0.0) / calls.agent_calls if calls.agent_calls else 0.0
    for key, limit in limits:
        n = calls.by_key.get(key, 0)
        for need, rate, unit in ((n, limit.requests_per_s, "calls"), (n * share, limit.tokens_per_s, "tokens")):
            if rate and need / rate > worst:
                worst, why = need / rate, f"{key} {limit.describe()} ({unit})"
    return worst, why


def forecast(calls: PlannedCalls, basis: PerRun, *, parallel: int, workers: int,
             limits: Sequence[tuple[str, RateLimit]]) -> Forecast:
    """The sweep's expected figures (see the module docstring)."""
    tokens = _sum(_total(basis.tokens, calls.runs), _total(basis.judge_tokens, calls.runs))
    cost = _total(basis.cost_usd, calls.runs)
    confirm_cost = None
    if basis.judge_cost_usd is not None:
        cost = (cost or 0.0) + basis.judge_cost_usd * calls.runs
        if calls.confirm_calls:  # each judged check of a run asked K − 1 more times, as paid as the first
            confirm_cost = basis.judge_cost_usd * calls.runs * (calls.confirm_failures - 1)
            cost += confirm_cost
    lanes = max(1, parallel * workers)
    caps = [limit.concurrency for _, limit in limits if limit.concurrency]
    if caps:
        lanes = min(lanes, sum(caps)) if len(caps) == len(limits) else lanes
    lanes = min(lanes, max(calls.runs, 1))
    wall = math.ceil(calls.runs / lanes) * basis.run_ms / 1000
    floor, why = _floor(calls, tokens, limits)
    if tokens is not None and basis.judge_tokens is not None and calls.confirm_calls:
        tokens += basis.judge_tokens * calls.runs * (calls.confirm_failures - 1)
    return Forecast(calls.runs, calls.agent_calls, calls.judge_calls, None if tokens is None else round(tokens),
                    cost, max(wall, floor), lanes, why if floor > wall else None, calls.confirm_calls, confirm_cost)
