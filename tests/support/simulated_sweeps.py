"""Simulated sweeps with known pass probabilities, for the comparison's error rates.

Shared by ``tests/stats/test_stats_compare.py`` (small, fixed seeds, rates asserted) and
``benchmarks/bench_compare.py`` (the issue's full sizes, figures printed).

- False alarms: BASE and HEAD drawn from the *same* probabilities; a comparison is a false alarm
  when it calls any case ``regressed``.
- Power: some cases drop from ``p_before`` to ``p_after``; count the drops called ``regressed``
  and the unchanged cases called ``regressed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from farm.stats.compare import CaseSnapshot, Comparison, SweepSnapshot, compare


def simulated_sweep(sweep_id: str, probabilities: Sequence[float], runs: int, rng: np.random.Generator
                    ) -> SweepSnapshot:
    """One sweep: case ``c<i>`` passes Binomial(runs, probabilities[i]) times."""
    passes = rng.binomial(runs, probabilities)
    cases = [CaseSnapshot(id=f"c{i}", runs=runs, passed=int(k)) for i, k in enumerate(passes)]
    return SweepSnapshot(sweep_id=sweep_id, cases=cases)


def regressed_ids(comparison: Comparison) -> set[str]:
    return {c.id for c in comparison.cases if c.verdict == "regressed"}


@dataclass(frozen=True)
class FalseAlarms:
    comparisons: int
    flagged: int
    """Comparisons that called at least one (unchanged) case regressed."""
    cases_flagged: int

    @property
    def rate(self) -> float:
        return self.flagged / self.comparisons


def false_alarms(*, comparisons: int, cases: int, runs: int, seed: int, low: float = 0.5, high: float = 1.0
                 ) -> FalseAlarms:
    """Unchanged suites: probabilities spread uniformly over [low, high], drawn anew per comparison."""
    rng = np.random.default_rng(seed)
    flagged = cases_flagged = 0
    for i in range(comparisons):
        p = rng.uniform(low, high, size=cases)
        result = compare(simulated_sweep(f"base{i}", p, runs, rng), simulated_sweep(f"head{i}", p, runs, rng))
        hits = len(regressed_ids(result))
        flagged += hits > 0
        cases_flagged += hits
    return FalseAlarms(comparisons, flagged, cases_flagged)


@dataclass(frozen=True)
class Power:
    trials: int
    drops: int
    """Cases that dropped, over all trials."""
    drops_flagged: int
    unchanged_flagged: list[int]
    """Per trial: unchanged cases called regressed."""

    @property
    def rate(self) -> float:
        return self.drops_flagged / self.drops


def power(*, trials: int, cases: int, dropping: int, runs: int, seed: int, p_before: float = 0.95,
          p_after: float = 0.75) -> Power:
    """``dropping`` of ``cases`` fall from ``p_before`` to ``p_after``; the rest stay at ``p_before``."""
    rng = np.random.default_rng(seed)
    before = np.full(cases, p_before)
    after = before.copy()
    after[:dropping] = p_after
    dropped = {f"c{i}" for i in range(dropping)}
    flagged = 0
    unchanged: list[int] = []
    for t in range(trials):
        hits = regressed_ids(compare(simulated_sweep(f"base{t}", before, runs, rng),
                                     simulated_sweep(f"head{t}", after, runs, rng)))
        flagged += len(hits & dropped)
        unchanged.append(len(hits - dropped))
    return Power(trials, trials * dropping, flagged, unchanged)
