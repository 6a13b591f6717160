"""Simulated sweeps for load bias (SPEC 25): runs started with a known ``in_flight``, passing with
known rates that do (load-sensitive) or do not (load-blind) depend on it.

Shared by ``tests/stats/test_load_simulated.py`` (few sweeps, rates asserted) and
``benchmarks/bench_load_bias.py`` (more sweeps, figures printed). The sweep's cases go through the
real accumulator and the sweep-wide split and test (``flag_load_bias``).

Three shapes of load, ten cases of ``runs`` runs each, in plan order:

- ``steady``: an in-process sweep at ``--parallel 16`` (the local executor): the i-th run of the
  sweep starts with min(i, 16) in flight: only the runs made while it fills up are below 16;
- ``fleet``: a fleet whose workers' runs come and go: each run starts with 8 to 16 in flight, at random;
- ``ramp``: ``--ramp 2,4,8,16``: a quarter of each case's runs at each level.

A load-blind case passes with its own chance (0.5 to 0.95) whatever the load; the load-sensitive
case passes 0.9 with at most ``K[shape]`` in flight and ``0.9 - drop`` above.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from farm.models import Case, CaseStats, RunResult, RunStatus, Turn
from farm.stats import CaseAccumulator, plan_case
from farm.stats.load_bias import flag_load_bias

PARALLEL = 16
CASES = 10
SHAPES = ("steady", "fleet", "ramp")
K = {"steady": 8, "fleet": 12, "ramp": 4}
"""The load-sensitive agent's limit per shape: it fails more above this many in flight (the
sweep's median load for ``fleet`` and ``ramp``; a steady sweep's median is its --parallel)."""


def in_flight(shape: str, case: int, runs: int, rng: np.random.Generator) -> np.ndarray:
    """Each run's ``in_flight`` for case number ``case`` (0-based, plan order) of ``CASES``."""
    if shape == "steady":
        index = np.arange(case * runs, (case + 1) * runs) + 1  # the sweep's i-th run, 1-based
        return np.minimum(index, PARALLEL)
    if shape == "fleet":
        return rng.integers(PARALLEL // 2, PARALLEL + 1, size=runs)
    levels = np.array([2, 4, 8, 16])
    return levels[np.minimum(np.arange(runs) * len(levels) // runs, len(levels) - 1)]


def simulated_stats(shape: str, chances: list[Callable[[np.ndarray], np.ndarray]], runs: int,
                    rng: np.random.Generator) -> list[CaseStats]:
    """One sweep: case i passes with ``chances[i](in_flight)``."""
    found = []
    for i, chance in enumerate(chances):
        case = Case(id=f"c{i}", format="yao", turns=[Turn(messages=[])])
        acc = CaseAccumulator(case, plan_case(case, runs, 1.0), max_details=0, semantic=False)
        loads = in_flight(shape, i, runs, rng)
        passes = rng.random(runs) < chance(loads)
        for run in range(runs):
            acc.add(RunResult(case_id=case.id, run=run + 1, in_flight=int(loads[run]),
                              status=RunStatus.PASSED if passes[run] else RunStatus.FAILED))
        found.append(acc.stats())
    flag_load_bias(found)
    return found


def blind(p: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda loads: np.full(len(loads), p)


def sensitive(drop: float, k: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda loads: np.where(loads > k, 0.9 - drop, 0.9)


@dataclass(frozen=True)
class Rates:
    shape: str
    sweeps: int
    runs: int
    drop: float
    null_alarms: int
    """Sweeps of ten load-blind cases where any case was flagged (false alarms)."""
    sensitive_flagged: int
    """Sweeps of one load-sensitive case (first in plan order) and nine blind ones where it was flagged (power)."""
    blind_alarms: int
    """Those sweeps where a blind case was flagged."""


def _flagged(stats: CaseStats) -> bool:
    return stats.load_bias is not None and stats.load_bias.flagged


def measure(shape: str, sweeps: int, *, runs: int = 40, drop: float = 0.5, seed: int = 44) -> Rates:
    rng = np.random.default_rng([seed, SHAPES.index(shape)])
    null = alarms = hit = 0
    for _ in range(sweeps):
        chances = [blind(p) for p in rng.uniform(0.5, 0.95, size=CASES)]
        null += any(_flagged(s) for s in simulated_stats(shape, chances, runs, rng))
        stats = simulated_stats(shape, [sensitive(drop, K[shape]), *chances[1:]], runs, rng)
        hit += _flagged(stats[0])
        alarms += any(_flagged(s) for s in stats[1:])
    return Rates(shape, sweeps, runs, drop, null, hit, alarms)
