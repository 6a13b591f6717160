"""Wald's sequential probability ratio test between two Bernoulli rates (pure): the one SPRT of
the farm, behind ``--adaptive=sequential`` (``farm.stats.adaptive.Sprt``: H0 fail, H1 pass) and
``farm bisect``'s probes (``farm.bisect.sequential.Sprt``: H0 good, H1 bad).

Each success adds log(p1 / p0) to the log-likelihood ratio, each failure log((1 − p1) / (1 − p0));
H1 is accepted once the ratio reaches log((1 − beta) / alpha), H0 once it falls to
log(beta / (1 − alpha)): alpha is the chance of accepting H1 when H0 holds, beta the reverse.
Rates of exactly 0 or 1 are allowed (an outcome impossible under one side decides at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = ["WaldTest"]


def _log_ratio(numerator: float, denominator: float) -> float:
    if numerator == denominator:
        return 0.0
    if denominator == 0:
        return math.inf
    return -math.inf if numerator == 0 else math.log(numerator / denominator)


@dataclass(frozen=True)
class WaldTest:
    """H0: successes at rate ``p0``; H1: at rate ``p1``."""

    p0: float
    p1: float
    alpha: float
    beta: float

    @property
    def upper(self) -> float:
        """Accept H1 at or above this log-likelihood ratio."""
        return math.log((1 - self.beta) / self.alpha)

    @property
    def lower(self) -> float:
        """Accept H0 at or below this one."""
        return math.log(self.beta / (1 - self.alpha))

    def llr(self, successes: int, failures: int) -> float:
        """log P(outcomes | p1) − log P(outcomes | p0)."""
        total = 0.0
        if successes:
            total += successes * _log_ratio(self.p1, self.p0)
        if failures:
            total += failures * _log_ratio(1 - self.p1, 1 - self.p0)
        return total

    def accepts(self, successes: int, failures: int) -> Literal["h0", "h1"] | None:
        """The hypothesis accepted after these outcomes, or None (go on)."""
        ratio = self.llr(successes, failures)
        if ratio >= self.upper:
            return "h1"
        if ratio <= self.lower:
            return "h0"
        return None
