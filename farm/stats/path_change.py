"""Did the distribution of tool-call paths move between two sweeps? (SPEC 21, ``farm compare``)

Per case, the paths of BASE and HEAD make a 2×k table: the ten most common paths (pooled over
both sides) as columns, every other path pooled into one. Where every expected count is at least 5
the G-test's chi-square p-value is used; otherwise a Monte-Carlo permutation test of the same
statistic (``PERMUTATIONS`` shuffles of the runs' sides, seeded, so a comparison repeats
exactly). q-values: Benjamini–Hochberg over the cases tested, as the pass-rate tests are.
A side's listed paths that do not add up to its runs (past ``MAX_LISTED_PATHS``) leave the rest
pooled too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from farm.models import FarmModel, TrajectoryPath

__all__ = ["PathCount", "PathShift", "path_p_value", "path_shift", "paths_of"]

MAX_PATHS_TESTED = 10
PERMUTATIONS = 2000
SEED = 21
MIN_EXPECTED = 5.0
OTHER = ("…other paths",)


class PathCount(FarmModel):
    """How many runs of one side took a path."""

    path: list[str]
    count: int


class PathShift(FarmModel):
    """The path whose share grew most from BASE to HEAD."""

    path: list[str]
    base_share: float
    head_share: float


def paths_of(trajectories: Sequence[TrajectoryPath], runs: int) -> list[PathCount]:
    """A case's listed paths as counts; a case whose runs called no tool took the empty path."""
    if not trajectories:
        return [PathCount(path=[], count=runs)] if runs else []
    counts = [PathCount(path=p.path, count=p.count) for p in trajectories]
    rest = runs - sum(c.count for c in counts)
    return [*counts, PathCount(path=list(OTHER), count=rest)] if rest > 0 else counts


def _table(base: Sequence[PathCount], head: Sequence[PathCount]) -> tuple[list[tuple[str, ...]], list[int], list[int]]:
    pooled: dict[tuple[str, ...], list[int]] = {}
    for side, counts in ((0, base), (1, head)):
        for c in counts:
            pooled.setdefault(tuple(c.path), [0, 0])[side] += c.count
    ranked = sorted(pooled, key=lambda p: (p == OTHER, -sum(pooled[p]), p))
    kept, rest = ranked[:MAX_PATHS_TESTED], ranked[MAX_PATHS_TESTED:]
    labels = list(kept)
    b = [pooled[p][0] for p in kept]
    h = [pooled[p][1] for p in kept]
    if rest:
        labels.append(OTHER)
        b.append(sum(pooled[p][0] for p in rest))
        h.append(sum(pooled[p][1] for p in rest))
    return labels, b, h


def _g_statistic(b: Sequence[int], h: Sequence[int]) -> float:
    nb, nh = sum(b), sum(h)
    total = nb + nh
    g = 0.0
    for x, y in zip(b, h, strict=True):
        col = x + y
        for observed, side in ((x, nb), (y, nh)):
            if observed:
                g += observed * math.log(observed * total / (col * side))
    return 2 * g


def path_p_value(base: Sequence[PathCount], head: Sequence[PathCount], *, seed: int = SEED) -> float | None:
    """p-value of "the paths are distributed alike"; None when a side has no run."""
    _labels, b, h = _table(base, head)
    nb, nh = sum(b), sum(h)
    if not nb or not nh:
        return None
    if len(b) < 2:
        return 1.0
    observed = _g_statistic(b, h)
    total = nb + nh
    if all((x + y) * side / total >= MIN_EXPECTED for x, y in zip(b, h, strict=True) for side in (nb, nh)):
        from scipy.stats import chi2  # only when a test runs (scipy is slow to import)

        return float(chi2.sf(observed, len(b) - 1))
    return _monte_carlo(b, h, observed, seed)


def _monte_carlo(b: Sequence[int], h: Sequence[int], observed: float, seed: int) -> float:
    """Share of ``PERMUTATIONS`` reshuffles of the runs between the sides whose G is at least the
    observed one (+1 on both sides of the fraction: a valid p-value), all shuffles at once."""
    import numpy as np

    k, nb = len(b), sum(b)
    col_totals = np.array([x + y for x, y in zip(b, h, strict=True)], dtype=float)
    columns = np.repeat(np.arange(k), col_totals.astype(int))
    shuffled = np.random.default_rng(seed).permuted(np.tile(columns, (PERMUTATIONS, 1)), axis=1)[:, :nb]
    offsets = np.arange(PERMUTATIONS)[:, None] * k
    sb = np.bincount((shuffled + offsets).ravel(), minlength=PERMUTATIONS * k).reshape(PERMUTATIONS, k).astype(float)
    sh = col_totals - sb
    total, nh = float(col_totals.sum()), float(sum(h))
    g = np.zeros(PERMUTATIONS)
    for observed_side, side in ((sb, float(nb)), (sh, nh)):
        expected = col_totals * side / total
        with np.errstate(divide="ignore", invalid="ignore"):
            g += np.where(observed_side > 0, observed_side * np.log(observed_side / expected), 0.0).sum(axis=1)
    at_least = int(np.count_nonzero(2 * g >= observed - 1e-9))
    return (at_least + 1) / (PERMUTATIONS + 1)


def path_shift(base: Sequence[PathCount], head: Sequence[PathCount]) -> PathShift | None:
    """The path whose share of the runs grew most (None when none grew)."""
    labels, b, h = _table(base, head)
    nb, nh = sum(b), sum(h)
    if not nb or not nh:
        return None
    grown = [(y / nh - x / nb, label, x / nb, y / nh) for label, x, y in zip(labels, b, h, strict=True)]
    growth, label, before, after = max(grown, key=lambda g: g[0])  # the first (most common) of equals
    if growth <= 0:
        return None
    return PathShift(path=list(label), base_share=round(before, 3), head_share=round(after, 3))
