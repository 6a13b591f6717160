"""pass@k and pass^k: unbiased estimators from n scored runs of which c passed.

pass@k (Chen et al., 2021) is the chance that at least one of k runs drawn without replacement
passes: 1 − C(n−c, k)/C(n, k). pass^k (Yao et al., τ-bench) is the chance that all k pass:
C(c, k)/C(n, k). Both are undefined (None) when n < k. They are probabilities in 0..1, computed
exactly with integers and rounded once.

The k values of a sweep travel in its envelope (``HistoryRecord.pass_k``, the report's
``metadata.pass_k``), which both executors hand to the case accumulator, so the in-process and
the distributed report carry the same figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from farm.models.envelope import SweepEnvelope
from farm.stats.measures import round_ratio_half_up

DEFAULT_PASS_K: tuple[int, ...] = (1, 5)
"""k = 1 anchors the figures (it equals the pass rate); k = 5 is the usual "five attempts"
figure (pass@5 for capability, pass^5 for reliability) and is defined from ``--runs 5`` on."""

PASS_K_DIGITS = 4
"""Decimals kept in the reports."""


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k of ``c`` passes in ``n`` runs; None when ``n < k``."""
    _check(n, c, k)
    if n < k:
        return None
    total = math.comb(n, k)
    return round_ratio_half_up(total - math.comb(n - c, k), total, PASS_K_DIGITS)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass^k of ``c`` passes in ``n`` runs; None when ``n < k``."""
    _check(n, c, k)
    if n < k:
        return None
    return round_ratio_half_up(math.comb(c, k), math.comb(n, k), PASS_K_DIGITS)


def pass_k_figures(n: int, c: int, ks: Iterable[int]) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """``(pass_at_k, pass_hat_k)`` for every k, keyed by k as a string (JSON object keys)."""
    ks = tuple(ks)
    return ({str(k): pass_at_k(n, c, k) for k in ks}, {str(k): pass_hat_k(n, c, k) for k in ks})


def pass_ks(envelope: SweepEnvelope | Mapping[str, Any]) -> tuple[int, ...]:
    """The k values a sweep asked for (its envelope's, or written-out metadata's, ``pass_k``), else
    ``DEFAULT_PASS_K``."""
    if not isinstance(envelope, SweepEnvelope):
        envelope = SweepEnvelope.model_validate(SweepEnvelope.split(envelope)[1])
    ks = envelope.history.pass_k if envelope.history is not None else None
    if not ks:
        return DEFAULT_PASS_K
    return tuple(sorted({int(k) for k in ks}))


def _check(n: int, c: int, k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not 0 <= c <= n:
        raise ValueError(f"need 0 ≤ c ≤ n, got c={c}, n={n}")
