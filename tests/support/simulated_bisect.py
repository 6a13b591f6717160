"""Simulated bisections: commits whose cases pass with known probabilities, probes drawn as
Binomials. Shared by ``tests/bisect/test_bisect.py`` (small, seeded) and ``benchmarks/bench_bisect.py``
(20 trials, figures printed)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from farm.bisect.search import Bisection
from farm.bisect.sequential import Sprt, smoothed

BEFORE, AFTER = 0.95, 0.55


@dataclass(frozen=True)
class Trial:
    named: str
    runs: int
    commits_probed: int
    suspects: int


def simulated_bisection(rng: np.random.Generator, *, commits: int = 8, first_bad: int = 5,
                        endpoint_runs: int = 30) -> Trial:
    """Commits ``c1``..``c<commits>`` (GOOD c1, BAD the last); the pass probability drops from
    ``BEFORE`` to ``AFTER`` at ``c<first_bad>``."""
    names = [f"c{i}" for i in range(1, commits + 1)]

    def probability(commit: str) -> float:
        return BEFORE if int(commit[1:]) < first_bad else AFTER

    def probe(commit: str, runs: int) -> tuple[int, int]:
        return int(rng.binomial(runs, probability(commit))), runs

    good, bad = probe(names[0], endpoint_runs)[0], probe(names[-1], endpoint_runs)[0]
    search = Bisection(names[1:], Sprt(smoothed(good, endpoint_runs), smoothed(bad, endpoint_runs)))
    search.run(probe)
    return Trial(search.first_bad, search.runs + 2 * endpoint_runs, len(search.probes) + 2, len(search.suspects()))


def trials(n: int, seed: int = 30) -> list[Trial]:
    rng = np.random.default_rng(seed)
    return [simulated_bisection(rng) for _ in range(n)]
