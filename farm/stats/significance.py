"""The tests behind a comparison of two sweeps: Boschloo's exact test, BH q-values, Newcombe.

- ``p_head_lower``: one-sided Boschloo exact test of "HEAD passes less often than BASE" on the
  2×2 table of passes and failures (scipy's ``boschloo_exact``; uniformly more powerful than
  Fisher's). It costs milliseconds to a tenth of a second per table, and a suite repeats tables
  (every 30/30 against 30/30 is the same question), so results are memoised on the table.
  "HEAD passes more often" is the same test with the columns swapped, and shares the memo.
- ``bh_q_values``: Benjamini–Hochberg adjusted p-values across the cases compared.
- ``newcombe_interval``: the hybrid score interval of a difference of two proportions
  (Newcombe 1998, method 10), built from the two Wilson intervals.

Pure: scipy and numpy, nothing else.
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


def bh_q_values(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg q-values (adjusted p-values), in the order given."""
    if not p_values:
        return []
    if min(p_values) >= 1.0:  # BH of p-values all 1 is all 1: no scipy import for it
        return [1.0] * len(p_values)
    from scipy.stats import false_discovery_control

    return [float(q) for q in false_discovery_control(list(p_values), method="bh")]


def z_for(alpha: float) -> float:
    """z of a two-sided (1 − 2·alpha) interval: each tail holds alpha."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be between 0 and 0.5, got {alpha}")
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha))


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
