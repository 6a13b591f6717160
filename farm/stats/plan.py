"""How many times a case runs and how many passes it needs (SPEC 4.1, 6).

All arithmetic is exact (integers and fractions): ``ceil(0.7 × 10)`` is 7, never 8 through a
float rounding error.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from farm.defaults import MAX_RUNS_PER_CASE
from farm.errors import SettingsError, SuiteError
from farm.models import Case
from farm.stats.adaptive import AdaptiveRule, StoppingRule


@dataclass(frozen=True)
class CasePlan:
    """The plan of one case: ``runs`` to execute, ``required`` passes for the case to pass.

    A skipped case is planned as one run needing no pass: the executor records that one run as
    ``skipped`` (no point in queueing N runs that do nothing).
    """

    runs: int
    required: int
    adaptive: AdaptiveRule | None = None
    """``--adaptive``: the rule that stops the case's runs once its verdict is settled (SPEC 13)."""

    def __post_init__(self) -> None:
        if not isinstance(self.runs, int) or isinstance(self.runs, bool) or self.runs < 1:
            raise ValueError(f"CasePlan.runs must be an integer ≥ 1, got {self.runs!r}")
        bad = not isinstance(self.required, int) or isinstance(self.required, bool)
        if bad or not 0 <= self.required <= self.runs:
            raise ValueError(f"CasePlan.required must be an integer in 0..{self.runs}, got {self.required!r}")

    def cannot_pass(self, counted: int, passed: int) -> bool:
        """The fail-fast rule: even if every run still missing passed, the case would fail."""
        return passed + (self.runs - counted) < self.required

    def stopping_rule(self) -> StoppingRule | None:
        """The case's adaptive rule (None: every planned run runs)."""
        return self.adaptive.rule_for(self.runs, self.required) if self.adaptive is not None else None


def required_passes(k: int, n: int, runs: int) -> int:
    """Passes needed out of ``runs`` for a ``k/n`` success ratio: ``ceil(k/n × runs)``."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"success ratio must be k/n with 0 ≤ k ≤ n and n ≥ 1, got {k}/{n}")
    if runs < 0:
        raise ValueError(f"runs must be ≥ 0, got {runs}")
    return -(-k * runs // n)


@functools.lru_cache(maxsize=64, typed=True)  # one Fraction per rate, not one per case
def _exact_rate(min_pass_rate: float) -> Fraction:
    # str() gives the shortest decimal that round-trips, i.e. what the user typed: 0.7 → 7/10.
    if not isinstance(min_pass_rate, (int, float)) or isinstance(min_pass_rate, bool):
        raise SettingsError(f"--min-pass-rate must be a number between 0 and 1, got {min_pass_rate!r}")
    if not math.isfinite(min_pass_rate) or not 0 <= min_pass_rate <= 1:
        raise SettingsError(f"--min-pass-rate must be between 0 and 1, got {min_pass_rate}")
    return Fraction(str(min_pass_rate))


def plan_case(case: Case, cli_runs: int | None, min_pass_rate: float, adaptive: AdaptiveRule | None = None
              ) -> CasePlan:
    """Plan ``case``: ``--runs`` wins over ``success_ratio``'s n; its k/n wins over the rate;
    ``adaptive`` (``--adaptive``) stops its runs once its verdict is settled."""
    if cli_runs is not None and (isinstance(cli_runs, bool) or cli_runs < 1):
        raise SettingsError(f"--runs must be at least 1, got {cli_runs}")
    if cli_runs is not None and cli_runs > MAX_RUNS_PER_CASE:
        raise SettingsError(f"--runs must be at most {MAX_RUNS_PER_CASE:,}, got {cli_runs}")
    _exact_rate(min_pass_rate)  # a bad rate is a settings error even when no case uses it
    if case.skip:
        return _shared_plan(1, 0, None)
    ratio = case.success_ratio
    if ratio is not None:
        if ratio.n < 1 or not 0 <= ratio.k <= ratio.n or ratio.n > MAX_RUNS_PER_CASE:
            raise SuiteError.single(
                case.source or case.id, case.line, "success_ratio",
                f"must be k/n with integers 0 ≤ k ≤ n and 1 ≤ n ≤ {MAX_RUNS_PER_CASE:,}, got {ratio.k}/{ratio.n}",
            )
        runs = cli_runs if cli_runs is not None else ratio.n
        return _shared_plan(runs, required_passes(ratio.k, ratio.n, runs), adaptive)
    return _rate_plan(min_pass_rate, cli_runs if cli_runs is not None else 1, adaptive)


@functools.lru_cache(maxsize=1024)
def _rate_plan(min_pass_rate: float, runs: int, adaptive: AdaptiveRule | None) -> CasePlan:
    # Keyed by the float the user gave: hashing a Fraction costs more than the rest of the plan.
    return _shared_plan(runs, math.ceil(_exact_rate(min_pass_rate) * runs), adaptive)


@functools.lru_cache(maxsize=1024)
def _shared_plan(runs: int, required: int, adaptive: AdaptiveRule | None) -> CasePlan:
    """Plans are frozen values: cases with the same numbers share one (a million cases, a few plans)."""
    return CasePlan(runs=runs, required=required, adaptive=adaptive)


def ramp_plan(plan: CasePlan, levels: int) -> CasePlan:
    """``farm test --ramp``: the case's runs at each of ``levels`` concurrencies, its passes
    required in proportion (SPEC 25). A skipped case is not ramped: it keeps its one placeholder."""
    if levels <= 1:
        return plan
    return _shared_plan(plan.runs * levels, plan.required * levels, plan.adaptive)
