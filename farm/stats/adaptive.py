"""Adaptive runs (SPEC 13): stop a case's runs once its verdict is settled.

- ``Curtailment``: a case needing k passes of R runs is decided at the k-th pass (pass) or the
  (R−k+1)-th failure (fail), whichever comes first. No further run can change that verdict, so
  it is always the verdict all R runs would give; only the runs are saved.
- ``Sprt``: Wald's sequential probability ratio test of H0 p ≤ p0 (fail) against H1 p ≥ p1
  (pass) with error rates alpha (pass given p0) and beta (fail given p1), truncated at R runs:
  undecided then, it is ``inconclusive`` (counted as failed for exit codes).

Runs are fed as counts of counted runs (skipped runs count neither way; error and timeout runs
are failures). A rule never decides before one run. ``AdaptiveRule`` is what a sweep's plan
carries (``--adaptive[=sequential]``, ``--sprt``): plain data that makes each case's rule from its
runs and requirement (``rule_for``). ``runs_needed`` says how many more runs a case certainly
needs before its rule can decide: that many can run at once without waste. ``operating_characteristics`` computes a
rule's exact verdict probabilities and expected runs for a pass probability p (dynamic
programming over (passes, failures)), for tests and ``benchmarks/bench_adaptive.py``.
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from farm.defaults import SPRT_ALPHA, SPRT_BETA, SPRT_ZONE
from farm.errors import SettingsError
from farm.stats.wald import WaldTest

Verdict = Literal["pass", "fail", "inconclusive"]


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    decided_after: int
    """Runs counted when the verdict was settled."""


class StoppingRule(Protocol):
    @property
    def runs(self) -> int:
        """Most runs the rule may take (R)."""
        ...

    def decide(self, passed: int, failed: int) -> Decision | None:
        """The verdict once settled by ``passed`` and ``failed`` counted runs, else None."""
        ...


@dataclass(frozen=True)
class Curtailment:
    """Exact curtailment of "at least ``required`` passes of ``runs``"."""

    runs: int
    required: int

    def __post_init__(self) -> None:
        if self.runs < 1 or not 0 <= self.required <= self.runs:
            raise ValueError(f"need 0 ≤ required ≤ runs and runs ≥ 1, got {self.required} of {self.runs}")

    def decide(self, passed: int, failed: int) -> Decision | None:
        done = passed + failed
        if done == 0:
            return None
        if passed >= self.required:
            return Decision("pass", done)
        if failed >= self.runs - self.required + 1:
            return Decision("fail", done)
        return None


@dataclass(frozen=True)
class Sprt:
    """Wald's SPRT on a pass probability (``farm.stats.wald``: H0 fail at p0, H1 pass at p1),
    truncated at ``runs``."""

    p0: float
    p1: float
    alpha: float
    beta: float
    runs: int

    def __post_init__(self) -> None:
        where = "--adaptive=sequential"
        if not 0 <= self.p0 < self.p1 <= 1:
            raise SettingsError(f"{where}: need 0 ≤ p0 < p1 ≤ 1, got p0={self.p0}, p1={self.p1}")
        if not (0 < self.alpha < 1 and 0 < self.beta < 1 and self.alpha + self.beta < 1):
            raise SettingsError(f"{where}: need alpha, beta in (0, 1) with alpha + beta < 1, "
                                f"got alpha={self.alpha}, beta={self.beta}")
        if self.runs < 1:
            raise SettingsError(f"{where}: need at least 1 run, got {self.runs}")

    @property
    def test(self) -> WaldTest:
        return WaldTest(self.p0, self.p1, self.alpha, self.beta)

    @property
    def upper(self) -> float:
        """Accept H1 (pass) at or above this log-likelihood ratio."""
        return self.test.upper

    @property
    def lower(self) -> float:
        """Accept H0 (fail) at or below this one."""
        return self.test.lower

    def llr(self, passed: int, failed: int) -> float:
        """log P(outcomes | p1) − log P(outcomes | p0)."""
        return self.test.llr(passed, failed)

    def decide(self, passed: int, failed: int) -> Decision | None:
        done = passed + failed
        if done == 0:
            return None
        accepted = self.test.accepts(passed, failed)
        if accepted is not None:
            return Decision("pass" if accepted == "h1" else "fail", done)
        return Decision("inconclusive", done) if done >= self.runs else None


AdaptiveKind = Literal["exact", "sequential"]


@dataclass(frozen=True)
class AdaptiveRule:
    """``--adaptive`` (``exact``: curtailment) or ``--adaptive=sequential`` (an SPRT) as plan data.

    The SPRT's p1 defaults to the case's own requirement (k/R: a passing case must plausibly
    meet it), p0 to p1 − ``SPRT_ZONE``; ``--sprt`` states all four for every case.
    """

    kind: AdaptiveKind = "exact"
    p0: float | None = None
    p1: float | None = None
    alpha: float = SPRT_ALPHA
    beta: float = SPRT_BETA

    def rule_for(self, runs: int, required: int) -> StoppingRule:
        """The stopping rule of a case of ``runs`` runs needing ``required`` passes."""
        if self.kind == "exact":
            return Curtailment(runs, required)
        p1 = self.p1 if self.p1 is not None else required / runs
        p0 = self.p0 if self.p0 is not None else max(0.0, p1 - SPRT_ZONE)
        if self.p1 is None and p1 <= 0:  # nothing required: the first run decides, as curtailment does
            return Curtailment(runs, required)
        return Sprt(p0, p1, self.alpha, self.beta, runs)

    def describe(self) -> str:
        if self.kind == "exact":
            return "exact (curtailment)"
        p0 = "p1-" + f"{SPRT_ZONE:g}" if self.p0 is None else f"{self.p0:g}"
        p1 = "required rate" if self.p1 is None else f"{self.p1:g}"
        return f"sequential (SPRT p0={p0}, p1={p1}, alpha={self.alpha:g}, beta={self.beta:g})"


def parse_sprt(text: str) -> AdaptiveRule:
    """``--sprt P0,P1,ALPHA,BETA`` as a sequential rule.

    Raises:
        SettingsError: not four numbers, or numbers the SPRT cannot take.
    """
    parts = [p.strip() for p in text.split(",")]
    try:
        p0, p1, alpha, beta = (float(p) for p in parts)
    except ValueError:
        raise SettingsError(f"--sprt {text!r}: expected P0,P1,ALPHA,BETA (four numbers, e.g. 0.7,0.9,0.05,0.1)"
                            ) from None
    Sprt(p0, p1, alpha, beta, 1)  # validates
    return AdaptiveRule("sequential", p0, p1, alpha, beta)


def runs_needed(rule: StoppingRule, passed: int, failed: int) -> int:
    """Runs certainly needed before ``rule`` can decide, from ``passed`` and ``failed`` counted runs
    (0 once decided): the fewest further runs that could decide it, all passing or all failing."""
    if rule.decide(passed, failed) is not None:
        return 0
    if isinstance(rule, Curtailment):  # the same, without the search
        return max(1, min(rule.required - passed, rule.runs - rule.required + 1 - failed))
    left = rule.runs - passed - failed
    for more in range(1, max(left, 0) + 1):
        if rule.decide(passed + more, failed) is not None or rule.decide(passed, failed + more) is not None:
            return more
    return max(left, 0)


@dataclass(frozen=True)
class Characteristics:
    """A rule's exact behaviour for one pass probability."""

    p_pass: float
    p_fail: float
    p_inconclusive: float
    expected_runs: float


def operating_characteristics(rule: StoppingRule, p: float) -> Characteristics:
    """Verdict probabilities and expected runs of ``rule`` when every run passes with probability ``p``."""
    verdicts = {"pass": 0.0, "fail": 0.0, "inconclusive": 0.0}
    expected = 0.0
    undecided = {0: 1.0}  # passes → probability, among paths of n runs not decided yet
    for n in range(1, rule.runs + 1):
        following: dict[int, float] = {}
        for passes, mass in undecided.items():
            for step, chance in ((1, p), (0, 1 - p)):
                if chance:
                    following[passes + step] = following.get(passes + step, 0.0) + mass * chance
        undecided = {}
        for passes, mass in following.items():
            decision = rule.decide(passes, n - passes)
            if decision is None:
                undecided[passes] = mass
            else:
                verdicts[decision.verdict] += mass
                expected += mass * n
        if not undecided:
            break
    return Characteristics(verdicts["pass"], verdicts["fail"], verdicts["inconclusive"], expected)
