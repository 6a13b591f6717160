"""Judge trust's statistics (SPEC 23) on simulated judges with known noise, and by hand."""

from __future__ import annotations

import pytest

from farm.stats.judge_labels import MIN_LABELS, JudgeAccuracy, corrected_pass_rate, judge_accuracy, refusal
from farm.stats.judge_trust import flip_rate, judge_alone, majority, true_flip_rate
from tests.support.simulated_judges import simulate_correction, simulate_flips


@pytest.mark.parametrize("p", [0.0, 0.01, 0.1, 0.5])
def test_the_flip_rate_interval_covers_the_true_rate_of_500_criteria(p: float) -> None:
    figures = simulate_flips(p, k=5, outputs=50, criteria=500, seed=42)
    assert figures.coverage >= 0.93, figures


def test_judge_noisy_is_rare_at_p_001_and_near_certain_at_p_01() -> None:
    quiet = simulate_flips(0.01, k=5, outputs=50, criteria=500, seed=7)
    loud = simulate_flips(0.1, k=5, outputs=50, criteria=500, seed=7)
    assert quiet.noisy_share <= 0.05, quiet
    assert loud.noisy_share >= 0.90, loud


def test_a_judge_that_never_flips_is_never_noisy_and_one_that_always_disagrees_is() -> None:
    steady = flip_rate([[True] * 5] * 50 + [[False] * 5] * 10)
    assert (steady.outputs, steady.flipped, steady.judge_flip_rate, steady.judge_noisy) == (60, 0, 0.0, False)
    assert steady.judge_flip_rate_ci[0] == 0.0 < steady.judge_flip_rate_ci[1] < 0.07
    shaky = flip_rate([[True, False, True]] * 20)
    assert shaky.judge_flip_rate == 1.0 and shaky.judge_noisy


def test_outputs_with_fewer_than_two_verdicts_show_no_flip_and_are_not_counted() -> None:
    found = flip_rate([[True], [], [True, False]])
    assert (found.outputs, found.flipped) == (1, 1)
    none = flip_rate([])
    assert (none.judge_flip_rate, none.judge_flip_rate_ci, none.judge_noisy) == (None, (0.0, 1.0), False)


def test_true_flip_rate_is_the_chance_k_verdicts_disagree() -> None:
    assert true_flip_rate(0.0, 5) == 0.0
    assert true_flip_rate(0.5, 1) == 0.0
    assert true_flip_rate(0.1, 2) == pytest.approx(2 * 0.1 * 0.9)


def test_judge_alone_counts_failures_the_majority_of_fresh_verdicts_passes() -> None:
    found = judge_alone([
        (False, [True, True, False]),   # failed once, passed by the majority: the judge's doing
        (False, [False, False, True]),  # failed and the majority agrees: the agent's
        (True, [False, False, False]),  # passed first: not a failure
        (False, []),                    # never re-judged: not counted
    ])
    assert (found.failures, found.explained, found.share) == (2, 1, 0.5)
    assert judge_alone([(True, [True])]).share is None
    assert majority([True, False]) is False  # a tie is no pass majority


def test_tpr_and_tnr_with_wilson_intervals() -> None:
    accuracy = judge_accuracy([(True, True)] * 18 + [(True, False)] * 2 + [(False, False)] * 15 + [(False, True)] * 5)
    assert (accuracy.tpr, accuracy.tnr) == (0.9, 0.75)
    low, high = accuracy.tpr_ci
    assert 0.68 < low < 0.9 < high < 0.98
    assert JudgeAccuracy(0, 0, 0, 0).tpr is None


def test_rogan_gladen_corrects_a_lenient_judge_by_hand() -> None:
    accuracy = JudgeAccuracy(human_passed=100, judge_passed_those=90, human_failed=100, judge_failed_those=80)
    found = corrected_pass_rate(69, 100, accuracy)  # 0.7·0.9 + 0.3·0.2 = 0.69 expected raw
    assert found.refused == ""
    assert found.corrected_pass_rate == pytest.approx((0.69 + 0.8 - 1) / (0.9 + 0.8 - 1))
    assert found.corrected_pass_rate_ci is not None
    low, high = found.corrected_pass_rate_ci
    assert low < found.corrected_pass_rate < high


@pytest.mark.parametrize(("truth", "tpr", "tnr", "labels", "judged"), [
    (0.7, 0.9, 0.8, 100, 200), (0.95, 0.9, 0.8, 40, 200), (0.3, 0.95, 0.7, 60, 100)])
def test_the_corrected_interval_covers_the_true_pass_rate_of_simulated_labels(
        truth: float, tpr: float, tnr: float, labels: int, judged: int) -> None:
    figures = simulate_correction(truth, tpr, tnr, labels=labels, judged=judged, criteria=500, seed=3)
    assert figures.refused == 0
    assert figures.corrected_covered / figures.criteria >= 0.93, figures
    if abs(truth - (truth * tpr + (1 - truth) * (1 - tnr))) > 0.1:
        assert figures.raw_covered / figures.criteria < 0.5, figures  # the raw rate is biased there


def test_no_correction_with_too_few_labels_or_a_judge_no_better_than_chance() -> None:
    few = JudgeAccuracy(human_passed=MIN_LABELS - 1, judge_passed_those=19, human_failed=50, judge_failed_those=50)
    assert refusal(few) == "fewer than 20 labels with human verdict 'pass' (19)"
    found = corrected_pass_rate(10, 20, few)
    assert (found.raw_pass_rate, found.corrected_pass_rate, found.corrected_pass_rate_ci) == (0.5, None, None)
    assert "fewer than 20" in found.refused
    coin = JudgeAccuracy(human_passed=40, judge_passed_those=20, human_failed=40, judge_failed_those=20)
    assert refusal(coin) == "the judge is no better than chance: TPR + TNR = 1.000 <= 1"
    assert corrected_pass_rate(5, 10, coin).corrected_pass_rate is None
    fine = JudgeAccuracy(human_passed=40, judge_passed_those=38, human_failed=40, judge_failed_those=36)
    assert corrected_pass_rate(0, 0, fine).refused == "no judged output to correct"
