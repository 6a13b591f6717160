"""Simulated sweeps for retry bias: runs retried with a known chance, passing with known rates.

Shared by ``tests/test_retry_bias.py`` (200 sweeps, rates asserted) and
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


def measure(sweeps: int, *, runs: int = 50, unbiased: int = 9, seed: int = 30) -> Rates:
    """``sweeps`` sweeps of one biased case (retried 30 %, clean 90 %) and ``unbiased`` cases at 90 %."""
    rng = np.random.default_rng(seed)
    cases = [SimulatedCase(0.3, 0.9), *[SimulatedCase(0.9, 0.9)] * unbiased]
    hit = alarms = 0
    for _ in range(sweeps):
        stats = simulated_stats(cases, runs, rng)
        hit += bool(stats[0].retry_bias and stats[0].retry_bias["flagged"])
        alarms += any(s.retry_bias and s.retry_bias["flagged"] for s in stats[1:])
    return Rates(sweeps, hit, alarms)
