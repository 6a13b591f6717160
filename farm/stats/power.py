"""What a sweep can see (SPEC 25): the power of ``farm compare``'s test for a case (pure).

``farm compare`` calls a case ``regressed`` when its one-sided Boschloo exact test of "HEAD passes
less often than BASE" gives p ≤ alpha (q, across cases: BH makes it stricter) and the drop is at
least ``min_drop`` points. With BASE's counts fixed (a recorded sweep), the test's p-value grows
with HEAD's passes, so the calls are exactly the HEAD counts k ≤ k*, the critical count; HEAD's
passes are binomial, so the power against a true drop d is P(Binomial(n, p_base − d) ≤ k*).
From that: the smallest drop detected with power 0.8 at the planned runs, and the runs needed to
detect a given drop. The power is of one case's test at alpha: BH across many cases lowers it.
"""

from __future__ import annotations

import functools
import math

from farm.stats.significance import p_head_lower

__all__ = ["DEFAULT_POWER", "MAX_RUNS_SEARCHED", "critical_passes", "detection_power", "runs_to_detect",
           "smallest_detectable_drop"]

DEFAULT_POWER = 0.8
MAX_RUNS_SEARCHED = 1_000
"""``runs_to_detect`` says "more than this" past it (the exact test's cost grows with the runs)."""


@functools.lru_cache(maxsize=4096)
def critical_passes(base_passed: int, base_runs: int, head_runs: int, alpha: float, min_drop: float) -> int:
    """The largest HEAD pass count (of ``head_runs``) that compare calls a regression from BASE's
    counts (p ≤ alpha and a drop of at least ``min_drop`` points); −1 when none is."""
    base_rate = base_passed / base_runs
    # the drop rule: k / n ≤ base_rate − min_drop / 100 (a hair of slack for floating point)
    most = math.floor(head_runs * (base_rate - min_drop / 100) + 1e-9)
    if most < 0:
        return -1

    def called(k: int) -> bool:
        return p_head_lower(k, head_runs, base_passed, base_runs) <= alpha

    guess = max(0, min(most, round(head_runs * base_rate - 2 * math.sqrt(head_runs) - 1)))
    k = guess
    if called(k):  # walk up while the next count is still called (p grows with k)
        while k < most and called(k + 1):
            k += 1
        return k
    while k > 0:
        k -= 1
        if called(k):
            return k
    return -1


def _binomial_cdf(k: int, n: int, p: float) -> float:
    from scipy.stats import binom  # scipy: only when power is asked for

    return float(binom.cdf(k, n, min(max(p, 0.0), 1.0)))


def detection_power(base_passed: int, base_runs: int, head_runs: int, drop: float, *, alpha: float,
                    min_drop: float) -> float:
    """The chance compare calls a regression when HEAD's true pass rate is ``drop`` points below
    BASE's observed one, with ``head_runs`` runs."""
    k = critical_passes(base_passed, base_runs, head_runs, alpha, min_drop)
    if k < 0:
        return 0.0
    return _binomial_cdf(k, head_runs, base_passed / base_runs - drop / 100)


def smallest_detectable_drop(base_passed: int, base_runs: int, head_runs: int, *, alpha: float, min_drop: float,
                             power: float = DEFAULT_POWER) -> float | None:
    """The smallest drop, in points (at least ``min_drop``, rounded up to a tenth), detected with
    ``power``; None when no drop down to a 0 % pass rate is."""
    top = 100 * base_passed / base_runs
    k = critical_passes(base_passed, base_runs, head_runs, alpha, min_drop)
    if k < 0 or _binomial_cdf(k, head_runs, 0.0) < power:
        return None
    low, high = 0.0, top  # the power grows with the drop: bisect to a hundredth of a point
    while high - low > 0.01:
        middle = (low + high) / 2
        if _binomial_cdf(k, head_runs, (top - middle) / 100) >= power:
            high = middle
        else:
            low = middle
    return max(min_drop, math.ceil(round(high * 10, 6)) / 10)


def runs_to_detect(base_passed: int, base_runs: int, drop: float, *, alpha: float, min_drop: float,
                   power: float = DEFAULT_POWER) -> int | None:
    """The fewest HEAD runs that detect a ``drop``-point fall with ``power`` (None: more than
    ``MAX_RUNS_SEARCHED``, or a drop below ``min_drop`` or past a 0 % pass rate)."""
    rate = base_passed / base_runs
    if drop <= min_drop or drop > 100 * rate:  # at the threshold compare calls at most half the drops
        return None

    def enough(n: int) -> bool:
        return detection_power(base_passed, base_runs, n, drop, alpha=alpha, min_drop=min_drop) >= power

    def may_be_enough(n: int) -> bool:  # the drop rule alone, without the test: cheap, necessary
        return _binomial_cdf(math.floor(n * (rate - min_drop / 100) + 1e-9), n, rate - drop / 100) >= power

    high = 2
    while not may_be_enough(high):
        if high >= MAX_RUNS_SEARCHED:
            return None
        high = min(2 * high, MAX_RUNS_SEARCHED)
    while not enough(high):
        if high >= MAX_RUNS_SEARCHED:
            return None
        high = min(2 * high, MAX_RUNS_SEARCHED)
    low = high // 2  # enough(high), not enough(low) (the power, a step function, mostly rises with n)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high
