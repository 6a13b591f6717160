"""Wald's sequential probability ratio test between GOOD's pass rate and BAD's (pure).

H0: the probe passes at GOOD's rate (the commit is good); H1: at BAD's rate (bad). Each pass adds
log(p_bad / p_good) to the log-likelihood ratio, each failure log((1 − p_bad) / (1 − p_good));
the probe is ``bad`` once the ratio reaches log((1 − beta) / alpha), ``good`` once it falls to
log(beta / (1 − alpha)): alpha is the chance of calling a good commit bad, beta of calling a bad
one good (Wald's bounds). Past the cap on runs the probe is ``inconclusive``, leaning to the
rate its runs are nearer. The rates are estimated from GOOD's and BAD's runs with a Laplace
pseudo-count, so a GOOD that passed every run does not make one failure damning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["good", "bad", "inconclusive"]

DEFAULT_ALPHA = 0.05
DEFAULT_BETA = 0.05


def smoothed(passed: int, runs: int) -> float:
    """(passed + 1) / (runs + 2): a rate never 0 or 1."""
    return (passed + 1) / (runs + 2)


@dataclass(frozen=True)
class Sprt:
    p_good: float
    p_bad: float
    alpha: float = DEFAULT_ALPHA
    beta: float = DEFAULT_BETA

    def __post_init__(self) -> None:
        if not 0 < self.p_bad < self.p_good < 1:
            raise ValueError(f"need 0 < p_bad < p_good < 1, got {self.p_bad}, {self.p_good}")

    def llr(self, passed: int, runs: int) -> float:
        failed = runs - passed
        return (passed * math.log(self.p_bad / self.p_good)
                + failed * math.log((1 - self.p_bad) / (1 - self.p_good)))

    def decide(self, passed: int, runs: int) -> Verdict:
        """``good``/``bad`` once a bound is crossed, else ``inconclusive`` (run more)."""
        ratio = self.llr(passed, runs)
        if ratio >= math.log((1 - self.beta) / self.alpha):
            return "bad"
        if ratio <= math.log(self.beta / (1 - self.alpha)):
            return "good"
        return "inconclusive"

    def leans_bad(self, passed: int, runs: int) -> bool:
        """Where an undecided probe leans: its rate nearer BAD's (the ratio above 0)."""
        return runs > 0 and self.llr(passed, runs) > 0
