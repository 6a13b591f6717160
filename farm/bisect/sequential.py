"""Wald's sequential probability ratio test between GOOD's pass rate and BAD's (pure): the farm's
one SPRT (``farm.stats.wald``) with H0 "the probe passes at GOOD's rate" (the commit is good) and
H1 "at BAD's rate" (bad); alpha is the chance of calling a good commit bad, beta of calling a bad
one good. Past the cap on runs the probe is ``inconclusive``, leaning to the
rate its runs are nearer. The rates are estimated from GOOD's and BAD's runs with a Laplace
pseudo-count, so a GOOD that passed every run does not make one failure damning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from farm.stats.wald import WaldTest

Verdict = Literal["good", "bad", "inconclusive"]

DEFAULT_ALPHA = 0.05
DEFAULT_BETA = 0.05


def smoothed(passed: int, runs: int) -> float:
    """(passed + 1) / (runs + 2): a rate never 0 or 1."""
    return (passed + 1) / (runs + 2)


@dataclass(frozen=True)
class Sprt:
    """``farm.stats.wald``'s test with H0 "good" (GOOD's rate) and H1 "bad" (BAD's)."""

    p_good: float
    p_bad: float
    alpha: float = DEFAULT_ALPHA
    beta: float = DEFAULT_BETA

    def __post_init__(self) -> None:
        if not 0 < self.p_bad < self.p_good < 1:
            raise ValueError(f"need 0 < p_bad < p_good < 1, got {self.p_bad}, {self.p_good}")

    @property
    def test(self) -> WaldTest:
        return WaldTest(p0=self.p_good, p1=self.p_bad, alpha=self.alpha, beta=self.beta)

    def llr(self, passed: int, runs: int) -> float:
        return self.test.llr(passed, runs - passed)

    def decide(self, passed: int, runs: int) -> Verdict:
        """``good``/``bad`` once a bound is crossed, else ``inconclusive`` (run more)."""
        accepted = self.test.accepts(passed, runs - passed)
        return "inconclusive" if accepted is None else "bad" if accepted == "h1" else "good"

    def leans_bad(self, passed: int, runs: int) -> bool:
        """Where an undecided probe leans: its rate nearer BAD's (the ratio above 0)."""
        return runs > 0 and self.llr(passed, runs) > 0
