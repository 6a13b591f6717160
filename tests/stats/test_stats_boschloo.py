"""The vectorised Boschloo test against scipy's (issue 45): compare's verdicts are scipy's.

``farm.stats.boschloo`` computes every p-value of a comparison in numpy; ``settled_p_lower``
hands any table whose verdict could hang on the difference to ``scipy.stats.boschloo_exact``.
The reference here is SPEC 12's rule written out with scipy's p-values and scipy's BH, so a
verdict that differs anywhere fails. The 10,000-pair and n = 1,000 samples are slow (scipy's test
takes ~30 ms a table at n ≤ 200 and ~10 s at n = 1,000): marked ``slow``.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from scipy.stats import boschloo_exact, false_discovery_control, norm

from farm.stats.boschloo import boschloo_less
from farm.stats.compare import CaseSnapshot, SweepSnapshot, compare
from farm.stats.significance import (
    FAST_SHORTFALL,
    SCIPY_SHORTFALL,
    SMALL_P,
    SMALL_P_SHORTFALL,
    bh_q_values,
    newcombe_interval,
)

Pair = tuple[int, int, int, int]
"""(base passed, base runs, head passed, head runs)."""


def scipy_p_lower(head_passed: int, head_runs: int, base_passed: int, base_runs: int) -> float:
    table = [[head_passed, base_passed], [head_runs - head_passed, base_runs - base_passed]]
    p = float(boschloo_exact(table, alternative="less").pvalue)
    return 1.0 if math.isnan(p) else min(1.0, max(0.0, p))


def reference_verdicts(pairs: list[Pair], alpha: float, min_drop: float, *, suite: bool = False) -> list[str]:
    """SPEC 12's verdicts with scipy's p-values and q-values. One pair at a time (``suite``
    False), a p-value is asked of scipy only when the verdict could use it (the move is at least
    ``min_drop``): q = p for a single case, and 1.0 stands in for the rest."""
    deltas = [Fraction(100 * h, hr) - Fraction(100 * b, br) for b, br, h, hr in pairs]
    threshold = Fraction(str(min_drop))
    moved = list(zip(pairs, deltas, strict=True))
    lower = [scipy_p_lower(h, hr, b, br) if suite or -d >= threshold else 1.0 for (b, br, h, hr), d in moved]
    higher = [scipy_p_lower(b, br, h, hr) if suite or d >= threshold else 1.0 for (b, br, h, hr), d in moved]
    if suite:
        lower, higher = list(false_discovery_control(lower)), list(false_discovery_control(higher))
    return [_verdict(pair, d, ql, qh, alpha, min_drop)
            for pair, d, ql, qh in zip(pairs, deltas, lower, higher, strict=True)]


def _verdict(pair: Pair, delta: Fraction, q_lower: float, q_higher: float, alpha: float, min_drop: float) -> str:
    b, br, h, hr = pair
    threshold = Fraction(str(min_drop))
    if q_lower <= alpha and -delta >= threshold:
        return "regressed"
    if q_higher <= alpha and delta >= threshold:
        return "improved"
    low, high = newcombe_interval(h, hr, b, br, float(norm.ppf(1 - alpha)))
    return "unchanged" if low * 100 >= -min_drop and high * 100 <= min_drop else "inconclusive"


def farm_verdicts(pairs: list[Pair], alpha: float, min_drop: float, *, one_by_one: bool) -> list[str]:
    def side(name: str, picked: list[tuple[str, int, int]]) -> SweepSnapshot:
        return SweepSnapshot(sweep_id=name, cases=[CaseSnapshot(id=i, runs=r, passed=p) for i, r, p in picked])

    groups = [[(i, pair)] for i, pair in enumerate(pairs)] if one_by_one else [list(enumerate(pairs))]
    verdicts = {}
    for group in groups:
        base = side("b", [(str(i), br, b) for i, (b, br, _h, _hr) in group])
        head = side("h", [(str(i), hr, h) for i, (_b, _br, h, hr) in group])
        verdicts |= {c.id: c.verdict for c in compare(base, head, alpha=alpha, min_drop=min_drop).cases}
    return [verdicts[str(i)] for i in range(len(pairs))]


def random_pairs(count: int, max_runs: int, seed: int, *, move: tuple[float, float]) -> list[Pair]:
    """Random sides: equal runs half the time; HEAD's pass probability moved by up to ``move``
    either way from BASE's, so p-values fall on both sides of alpha."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        base_runs = rng.randint(1, max_runs)
        head_runs = base_runs if rng.random() < 0.5 else rng.randint(1, max_runs)
        p = rng.random()
        moved = min(1.0, max(0.0, p + rng.choice((-1, 1)) * rng.uniform(*move)))
        base = sum(rng.random() < p for _ in range(base_runs))
        head = sum(rng.random() < moved for _ in range(head_runs))
        pairs.append((base, base_runs, head, head_runs))
    return pairs


def check_against_scipy(pairs: list[Pair], alpha: float, min_drop: float) -> None:
    expected = reference_verdicts(pairs, alpha, min_drop)
    one_by_one = farm_verdicts(pairs, alpha, min_drop, one_by_one=True)
    mismatches = [(pair, want, got) for pair, want, got in zip(pairs, expected, one_by_one, strict=True) if want != got]
    assert not mismatches, mismatches[:10]


# ------------------------------------------------------------------------------ fast lane


def test_vectorised_p_values_lie_within_the_shortfalls_of_scipys() -> None:
    pairs = random_pairs(40, 120, seed=7, move=(0.0, 0.3))
    fast = boschloo_less([(h, hr, b, br) for b, br, h, hr in pairs])
    for (b, br, h, hr), value in zip(pairs, fast, strict=True):
        exact = scipy_p_lower(h, hr, b, br)
        assert value is not None
        shortfall = SCIPY_SHORTFALL if exact >= SMALL_P else SMALL_P_SHORTFALL
        assert exact * (1 - FAST_SHORTFALL) <= value <= exact / (1 - shortfall) + 1e-300, (b, br, h, hr)


def test_edge_tables_match_scipy() -> None:
    tables = [(0, 1, 1, 1), (1, 1, 0, 1), (0, 5, 5, 5), (5, 5, 0, 5), (3, 3, 3, 3), (0, 3, 0, 3), (0, 50, 50, 50),
              (50, 50, 0, 50), (25, 50, 25, 50), (0, 0, 3, 4), (2, 4, 0, 0)]
    fast = boschloo_less(tables)
    for table, value in zip(tables, fast, strict=True):
        assert value == pytest.approx(scipy_p_lower(*table), rel=SMALL_P_SHORTFALL, abs=1e-12), table


def test_compare_verdicts_equal_scipys_on_random_pairs() -> None:
    check_against_scipy(random_pairs(60, 200, seed=1, move=(0.05, 0.3)), alpha=0.1, min_drop=10)


def test_compare_verdicts_equal_scipys_across_a_suite() -> None:
    """Many cases in one comparison: BH couples them, and the settled p-values keep every verdict."""
    pairs = random_pairs(80, 60, seed=3, move=(0.0, 0.35))
    assert farm_verdicts(pairs, 0.1, 10, one_by_one=False) == reference_verdicts(pairs, 0.1, 10, suite=True)


def test_a_p_value_at_the_threshold_is_settled_by_scipy() -> None:
    """alpha set to scipy's own p-value of a table: the fast value may sit either side of it, the
    verdict must not."""
    pair = (40, 50, 30, 50)  # BASE 40/50, HEAD 30/50: a 20-point drop
    exact = scipy_p_lower(30, 50, 40, 50)
    for alpha in (exact, exact * (1 - 1e-9), exact * (1 + 1e-9)):
        check_against_scipy([pair], alpha=alpha, min_drop=10)


def test_bh_q_values_are_scipys() -> None:
    rng = random.Random(5)
    for _ in range(50):
        ps = [round(rng.random() ** 3, rng.randint(1, 4)) for _ in range(rng.randint(1, 40))]
        assert bh_q_values(ps) == [float(q) for q in false_discovery_control(ps, method="bh")]


# ------------------------------------------------------------------------------ slow lane


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_compare_verdicts_equal_scipys_on_10000_pairs_up_to_200_runs() -> None:
    check_against_scipy(random_pairs(10_000, 200, seed=11, move=(0.0, 0.3)), alpha=0.1, min_drop=10)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_compare_verdicts_equal_scipys_on_50_pairs_at_1000_runs() -> None:
    # at 1,000 runs a 10-point drop is always significant: a 1-point threshold puts p near alpha
    rng = random.Random(13)
    pairs = []
    for _ in range(50):
        p = rng.uniform(0.3, 0.95)
        base = sum(rng.random() < p for _ in range(1000))
        head = sum(rng.random() < p - rng.uniform(0.0, 0.06) for _ in range(1000))
        pairs.append((base, 1000, head, 1000))
    check_against_scipy(pairs, alpha=0.1, min_drop=1)
