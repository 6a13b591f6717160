"""The tests behind a comparison of two sweeps: Boschloo's exact test, BH q-values, Newcombe.

- ``p_head_lower``: one-sided Boschloo exact test of "HEAD passes less often than BASE" on the
  2×2 table of passes and failures (scipy's ``boschloo_exact``; uniformly more powerful than
  Fisher's). It costs milliseconds to a tenth of a second per table, and a suite repeats tables
  (every 30/30 against 30/30 is the same question), so results are memoised on the table.
  "HEAD passes more often" is the same test with the columns swapped, and shares the memo.
- ``settled_p_lower``: ``p_head_lower`` for every case of a comparison at once: numpy's
  vectorised Boschloo (``farm.stats.boschloo``), and scipy's exact test wherever the difference
  between the two could change a verdict (a q-value within ``SCIPY_SHORTFALL`` of alpha).
- ``bh_q_values``: Benjamini–Hochberg adjusted p-values across the cases compared.
- ``newcombe_interval``: the hybrid score interval of a difference of two proportions
  (Newcombe 1998, method 10), built from the two Wilson intervals.

Pure: scipy and numpy, nothing else; scipy is imported only when scipy's own test runs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from farm.stats.measures import wilson_interval

MEMO_SIZE = 1 << 16
"""Tables remembered (a few hundred bytes each); a 50-run suite has at most 51² of them."""


@functools.lru_cache(maxsize=MEMO_SIZE)
def p_head_lower(head_passed: int, head_runs: int, base_passed: int, base_runs: int) -> float:
    """One-sided p-value of "HEAD's pass probability is lower than BASE's" (Boschloo's test).

    1.0 when either side has no run (nothing to test).
    """
    _check(head_passed, head_runs)
    _check(base_passed, base_runs)
    if head_runs == 0 or base_runs == 0:
        return 1.0
    from scipy.stats import boschloo_exact  # scipy costs ~0.3 s to import: only when a test runs

    # Columns are the two binomial samples (scipy's convention); "less": p(HEAD) < p(BASE).
    table = [[head_passed, base_passed], [head_runs - head_passed, base_runs - base_passed]]
    p = float(boschloo_exact(table, alternative="less").pvalue)
    return 1.0 if math.isnan(p) else min(1.0, max(0.0, p))


def p_head_higher(head_passed: int, head_runs: int, base_passed: int, base_runs: int) -> float:
    """One-sided p-value of "HEAD's pass probability is higher than BASE's" (the mirror test)."""
    return p_head_lower(base_passed, base_runs, head_passed, head_runs)


SCIPY_SHORTFALL = 5e-3
"""How far below the true maximum scipy's optimiser may stop, relative, for p ≥ ``SMALL_P`` (at most
3.5e-4 seen on 4,500 random tables with n ≤ 200): a fast p-value this close to deciding a verdict
is replaced by scipy's."""

SMALL_P = 1e-3
SMALL_P_SHORTFALL = 2e-2
"""The same below ``SMALL_P``, where scipy stops further short (3.4e-3 seen, at p ≈ 3e-5)."""

FAST_SHORTFALL = 1e-8
"""How far below the maximum the grid and Newton steps of ``farm.stats.boschloo`` may stop, relative."""


def settled_p_lower(tables: Sequence[tuple[int, int, int, int]], matters: Sequence[bool], alpha: float
                    ) -> list[float]:
    """``p_head_lower(*table)`` of every table (head passed, head runs, base passed, base runs),
    such that whether each q-value (BH over all of them) is at most ``alpha`` is scipy's answer
    for every table whose ``matters`` is true. The vectorised p-values are used where no error
    of ``SCIPY_SHORTFALL`` (``SMALL_P_SHORTFALL`` below ``SMALL_P``) below or ``FAST_SHORTFALL``
    above could change that; scipy settles the rest."""
    from farm.stats.boschloo import boschloo_less

    fast = boschloo_less(tables)
    p = [value if value is not None else p_head_lower(*table) for value, table in zip(fast, tables, strict=True)]
    approximate = [value is not None for value in fast]
    while unsure := _unsure(p, approximate, matters, alpha):
        for i in unsure:
            p[i], approximate[i] = p_head_lower(*tables[i]), False
    return p


def _unsure(p: list[float], approximate: list[bool], matters: Sequence[bool], alpha: float) -> list[int]:
    """Approximate p-values whose error could flip ``q ≤ alpha`` for a table that matters."""
    low = bh_q_values([x * (1 - (SCIPY_SHORTFALL if x >= SMALL_P else SMALL_P_SHORTFALL)) if a else x
                       for x, a in zip(p, approximate, strict=True)])
    high = bh_q_values([x * (1 + FAST_SHORTFALL) if a else x for x, a in zip(p, approximate, strict=True)])
    flips = [i for i, m in enumerate(matters) if m and (low[i] <= alpha) != (high[i] <= alpha)]
    if not flips:
        return []
    own = [i for i in flips if approximate[i]]
    # a flip among exact p-values comes from an approximate one moving the BH cut: settle those that could
    return own or [i for i, a in enumerate(approximate) if a and low[i] <= alpha]


def bh_q_values(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg q-values (adjusted p-values), in the order given: scipy's
    ``false_discovery_control(method="bh")``, the same arithmetic in numpy."""
    if not p_values:
        return []
    if min(p_values) >= 1.0:  # BH of p-values all 1 is all 1: no numpy import for it
        return [1.0] * len(p_values)
    import numpy as np

    ps = np.asarray(p_values, dtype=float)
    m = len(ps)
    order = np.argsort(ps)
    ranked = ps[order] * (m / np.arange(1, m + 1, dtype=float))
    np.minimum.accumulate(ranked[::-1], out=ranked[::-1])
    q = np.empty(m)
    q[order] = ranked
    return [float(x) for x in np.clip(q, 0.0, 1.0)]


def z_for(alpha: float) -> float:
    """z of a two-sided (1 − 2·alpha) interval: each tail holds alpha (the standard library's
    normal quantile: scipy's ``norm.ppf`` to the last bit or one ulp off, without scipy's import)."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be between 0 and 0.5, got {alpha}")
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - alpha)


def newcombe_interval(head_passed: int, head_runs: int, base_passed: int, base_runs: int, z: float
                      ) -> tuple[float, float]:
    """Interval of p(HEAD) − p(BASE), as fractions in −1..1 (Newcombe's hybrid score method).

    A side without runs contributes its whole Wilson range (0, 1), so the interval is wide.
    """
    p1 = head_passed / head_runs if head_runs else 0.0
    p2 = base_passed / base_runs if base_runs else 0.0
    l1, u1 = wilson_interval(head_passed, head_runs, z)
    l2, u2 = wilson_interval(base_passed, base_runs, z)
    d = p1 - p2
    return (d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))


def _check(passed: int, runs: int) -> None:
    if runs < 0 or not 0 <= passed <= runs:
        raise ValueError(f"need 0 ≤ passed ≤ runs, got {passed}/{runs}")
