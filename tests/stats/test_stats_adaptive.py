"""Adaptive runs (SPEC 13): curtailment always gives the full sweep's verdict; the SPRT keeps the
error rates it states; both checked exactly, and by simulating agents of known pass probability."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from farm.errors import SettingsError
from farm.stats.adaptive import Curtailment, Decision, Sprt, StoppingRule, operating_characteristics


def feed(rule: StoppingRule, outcomes: list[bool]) -> Decision:
    passed = failed = 0
    for outcome in outcomes:
        passed, failed = passed + outcome, failed + (not outcome)
        decision = rule.decide(passed, failed)
        if decision is not None:
            return decision
    raise AssertionError(f"undecided after {outcomes}")


@pytest.mark.parametrize("runs", range(1, 11))
def test_curtailment_gives_the_full_verdict_on_every_sequence_and_stops_as_soon_as_it_can(runs: int) -> None:
    for required in range(runs + 1):
        rule = Curtailment(runs, required)
        for outcomes in itertools.product([True, False], repeat=runs):
            decision = feed(rule, list(outcomes))
            full = "pass" if sum(outcomes) >= required else "fail"
            assert decision.verdict == full, (required, outcomes)
            done = outcomes[: decision.decided_after - 1]  # one run earlier, both verdicts were possible
            if decision.decided_after > 1:
                assert sum(done) < required and len(done) - sum(done) < runs - required + 1


def test_curtailment_rules_of_the_spec() -> None:
    rule = Curtailment(runs=10, required=7)
    assert rule.decide(7, 0) == Decision("pass", 7)
    assert rule.decide(6, 3) is None
    assert rule.decide(6, 4) == Decision("fail", 10) and rule.decide(2, 4) == Decision("fail", 6)
    assert Curtailment(5, 0).decide(0, 1) == Decision("pass", 1)  # nothing needed: one run, then done
    assert Curtailment(5, 5).decide(4, 1) == Decision("fail", 5)
    assert Curtailment(3, 1).decide(0, 0) is None
    with pytest.raises(ValueError):
        Curtailment(3, 4)


def test_curtailment_saves_runs_where_the_verdict_is_clear() -> None:
    rule = Curtailment(runs=50, required=40)
    assert operating_characteristics(rule, 0.5).expected_runs == pytest.approx(22.0, abs=0.01)
    assert operating_characteristics(rule, 0.95).expected_runs < 43
    assert operating_characteristics(rule, 0.95).p_inconclusive == 0.0


SPRTS = [Sprt(0.5, 0.9, 0.05, 0.1, 50), Sprt(0.6, 0.8, 0.05, 0.05, 200), Sprt(0.7, 0.95, 0.1, 0.1, 30),
         Sprt(0.3, 0.6, 0.01, 0.2, 100), Sprt(0.0, 0.5, 0.05, 0.05, 20), Sprt(0.5, 1.0, 0.05, 0.05, 20)]


@pytest.mark.parametrize("sprt", SPRTS, ids=lambda s: f"{s.p0}-{s.p1}-{s.alpha}-{s.beta}-{s.runs}")
def test_the_sprt_keeps_its_stated_error_rates(sprt: Sprt) -> None:
    at_p0, at_p1 = operating_characteristics(sprt, sprt.p0), operating_characteristics(sprt, sprt.p1)
    assert at_p0.p_pass <= sprt.alpha / (1 - sprt.beta)  # Wald's bounds (truncation only lowers them)
    assert at_p1.p_fail <= sprt.beta / (1 - sprt.alpha)
    assert at_p0.p_pass + at_p1.p_fail <= sprt.alpha + sprt.beta
    assert at_p0.expected_runs < sprt.runs and at_p1.expected_runs < sprt.runs
    total = at_p0.p_pass + at_p0.p_fail + at_p0.p_inconclusive
    assert total == pytest.approx(1.0)


def test_simulated_agents_match_the_exact_error_rates() -> None:
    sprt, trials, rng = Sprt(0.6, 0.85, 0.05, 0.1, 60), 4000, random.Random(1307)
    for p, verdict in ((sprt.p0, "pass"), (sprt.p1, "fail")):
        wrong = sum(feed(sprt, [rng.random() < p for _ in range(sprt.runs)]).verdict == verdict
                    for _ in range(trials))
        exact = operating_characteristics(sprt, p)
        rate = exact.p_pass if verdict == "pass" else exact.p_fail
        assert abs(wrong / trials - rate) <= 4 * math.sqrt(rate * (1 - rate) / trials)


def test_truncation_is_inconclusive_and_bad_parameters_are_settings_errors() -> None:
    sprt = Sprt(0.4, 0.6, 0.01, 0.01, 4)
    assert sprt.decide(2, 2) == Decision("inconclusive", 4)
    assert sprt.decide(1, 1) is None
    assert Sprt(0.0, 0.5, 0.05, 0.05, 10).decide(1, 0) == Decision("pass", 1)  # p0 = 0: one pass refutes it
    for bad in ((0.8, 0.6, 0.05, 0.05, 10), (0.5, 0.9, 0.0, 0.05, 10), (0.5, 0.9, 0.6, 0.5, 10),
                (0.5, 0.9, 0.05, 0.05, 0)):
        with pytest.raises(SettingsError, match="--adaptive=sequential"):
            Sprt(*bad)
