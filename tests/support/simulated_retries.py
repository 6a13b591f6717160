"""Simulated sweeps for retry bias: runs retried with a known chance, passing with known rates.

Shared by ``tests/stats/test_retry_bias.py`` (200 sweeps, rates asserted) and
``benchmarks/bench_retry_bias.py`` (the same, more sweeps, figures printed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from farm.models import Case, CaseStats, RunResult, RunStatus, Turn
from farm.stats import CaseAccumulator, plan_case
from farm.stats.retry_bias import flag_retry_bias


@dataclass(frozen=True)
class SimulatedCase:
    retried_pass: float
    clean_pass: float
    retry_chance: float = 0.3


def simulated_stats(cases: list[SimulatedCase], runs: int, rng: np.random.Generator) -> list[CaseStats]:
    """One sweep's case statistics, through the real accumulator and the sweep-wide test."""
    found = []
    for i, sim in enumerate(cases):
        case = Case(id=f"c{i}", format="yao", turns=[Turn(messages=[])])
        acc = CaseAccumulator(case, plan_case(case, runs, 1.0), max_details=0)
        retried = rng.random(runs) < sim.retry_chance
        passes = rng.random(runs) < np.where(retried, sim.retried_pass, sim.clean_pass)
        for run in range(runs):
            acc.add(RunResult(case_id=case.id, run=run + 1, retries=int(retried[run]),
                              status=RunStatus.PASSED if passes[run] else RunStatus.FAILED))
        found.append(acc.stats())
    flag_retry_bias(found)
    return found


@dataclass(frozen=True)
class Rates:
    sweeps: int
    biased_flagged: int
    """Sweeps where the biased case was flagged."""
    false_alarms: int
    """Sweeps where any unbiased case was flagged."""
    null_alarms: int
    """Sweeps of unbiased cases only (retried and clean both 90 %) where any case was flagged."""


def _flagged(stats: CaseStats) -> bool:
    return bool(stats.retry_bias and stats.retry_bias["flagged"])


def measure(sweeps: int, *, runs: int = 50, unbiased: int = 9, seed: int = 30) -> Rates:
    """``sweeps`` sweeps of one biased case (retried 30 %, clean 90 %) and ``unbiased`` cases at 90 %,
    and as many of ``unbiased + 1`` cases at 90 % either way."""
    rng, null_rng = np.random.default_rng(seed), np.random.default_rng([seed, 1])  # the null sweeps' own stream
    fair = [SimulatedCase(0.9, 0.9)] * unbiased
    hit = alarms = null_alarms = 0
    for _ in range(sweeps):
        stats = simulated_stats([SimulatedCase(0.3, 0.9), *fair], runs, rng)
        hit += _flagged(stats[0])
        alarms += any(_flagged(s) for s in stats[1:])
        null_alarms += any(_flagged(s) for s in simulated_stats([*fair, fair[0]], runs, null_rng))
    return Rates(sweeps, hit, alarms, null_alarms)
