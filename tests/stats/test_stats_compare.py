"""The comparison of two sweeps: the tests it rests on, SPEC 12's verdict rules, simulated error rates."""

from __future__ import annotations

import pytest

from farm.errors import SettingsError
from farm.models import FailureReason
from farm.stats.compare import CaseSnapshot, Comparison, SweepSnapshot, compare, snapshot_of
from farm.stats.significance import bh_q_values, newcombe_interval, p_head_higher, p_head_lower, z_for
from tests.support.browser_fixtures import case_stats, run, sweep_report
from tests.support.simulated_sweeps import false_alarms, power

# ------------------------------------------------------------------------------- the tests


def test_newcombe_interval_matches_newcombe_1998_table_ii() -> None:
    # Method 10 (hybrid score) in Newcombe, Statistics in Medicine 17 (1998) 873–890.
    low, high = newcombe_interval(56, 70, 48, 80, z_for(0.025))
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)
    low, high = newcombe_interval(9, 10, 3, 10, z_for(0.025))
    assert (round(low, 4), round(high, 4)) == (0.1705, 0.8090)


def test_boschloo_is_one_sided_mirrored_and_memoised() -> None:
    drop = p_head_lower(10, 30, 28, 30)
    assert drop < 0.001 and p_head_higher(10, 30, 28, 30) > 0.99
    assert p_head_higher(28, 30, 10, 30) == drop  # the mirror question, answered from the memo
    before = p_head_lower.cache_info().hits
    p_head_lower(10, 30, 28, 30)
    assert p_head_lower.cache_info().hits == before + 1
    assert p_head_lower(0, 0, 5, 5) == 1.0  # no runs on one side: nothing to test


def test_bh_q_values_against_a_hand_computed_example() -> None:
    # sorted p: .01 .02 .04 .5 → p·m/rank: .04 .04 .0533 .5 → running minimum from the top
    assert bh_q_values([0.01, 0.02, 0.5, 0.04]) == pytest.approx([0.04, 0.04, 0.5, 0.053333], abs=1e-6)
    assert bh_q_values([]) == []


# ------------------------------------------------------------------------------- verdicts


def snap(sweep_id: str, *cases: tuple[str, int, int] | CaseSnapshot) -> SweepSnapshot:
    made = [c if isinstance(c, CaseSnapshot) else CaseSnapshot(id=c[0], runs=c[1], passed=c[2]) for c in cases]
    return SweepSnapshot(sweep_id=sweep_id, started_at="2026-11-01T00:00:00Z", cases=made)


def verdicts(result: Comparison) -> dict[str, str]:
    return {c.id: c.verdict for c in result.cases}


def test_each_verdict_of_spec_12() -> None:
    base = snap("b", ("drop", 30, 30), ("rise", 30, 10), ("same", 200, 200), ("few", 2, 2), ("gone", 5, 5))
    head = snap("h", ("drop", 30, 10), ("rise", 30, 30), ("same", 200, 199), ("few", 2, 0), ("fresh", 5, 5))
    result = compare(base, head)
    assert verdicts(result) == {"drop": "regressed", "rise": "improved", "same": "unchanged",
                                "few": "inconclusive", "fresh": "new", "gone": "removed"}
    assert result.summary == {"regressed": 1, "improved": 1, "unchanged": 1, "inconclusive": 1, "new": 1,
                              "removed": 1, "not_run": 0}
    assert result.regressed
    assert [c.id for c in result.cases] == ["drop", "rise", "same", "few", "fresh", "gone"]


def test_a_significant_drop_under_min_drop_is_not_a_regression() -> None:
    # 100 % → 95 % over 400 runs is certain but only 5 points; the interval sits inside ±10 (400,
    # not 1,000, runs: the exact test's cost grows with n, and this test is about the verdict rule,
    # not compare's speed, which benchmarks/ measures)
    result = compare(snap("b", ("a", 400, 400)), snap("h", ("a", 400, 380)))
    (row,) = result.cases
    assert row.q_value is not None and row.q_value < 1e-5
    assert row.verdict == "unchanged" and row.delta == -5.0
    assert verdicts(compare(snap("b", ("a", 400, 400)), snap("h", ("a", 400, 380)), min_drop=5)) == {
        "a": "regressed"}


def test_the_min_drop_threshold_is_exact() -> None:
    # 95 % → 85 % is exactly 10 points (no float rounding may push it under)
    row = compare(snap("b", ("a", 200, 190)), snap("h", ("a", 200, 170))).cases[0]
    assert row.delta == -10.0 and row.verdict == "regressed"


def test_ten_identical_runs_are_not_enough_to_call_a_case_unchanged() -> None:
    assert verdicts(compare(snap("b", ("a", 10, 10)), snap("h", ("a", 10, 10)))) == {"a": "inconclusive"}
    assert verdicts(compare(snap("b", ("a", 100, 100)), snap("h", ("a", 100, 100)))) == {"a": "unchanged"}


def test_q_values_adjust_for_the_cases_compared() -> None:
    alone = compare(snap("b", ("x", 30, 30)), snap("h", ("x", 30, 25))).cases[0]
    crowd = compare(snap("b", ("x", 30, 30), *[(f"u{i}", 30, 30) for i in range(40)]),
                    snap("h", ("x", 30, 25), *[(f"u{i}", 30, 30) for i in range(40)])).cases[0]
    assert alone.p_value == crowd.p_value and alone.q_value == alone.p_value
    assert crowd.q_value is not None and alone.q_value is not None and crowd.q_value > alone.q_value
    assert alone.verdict == "regressed" and crowd.verdict == "inconclusive"


def test_p_value_is_that_of_the_direction_the_rate_moved() -> None:
    down = compare(snap("b", ("a", 30, 28)), snap("h", ("a", 30, 20))).cases[0]
    up = compare(snap("b", ("a", 30, 20)), snap("h", ("a", 30, 28))).cases[0]
    assert down.p_value == up.p_value == float(f"{p_head_lower(20, 30, 28, 30):.4g}")
    assert down.delta == -26.7 and up.delta == 26.7


def test_adaptive_cases_are_compared_on_their_verdicts() -> None:
    base = snap("b", CaseSnapshot(id="a", runs=3, passed=3, case_passed=True, adaptive=True),
                CaseSnapshot(id="k", runs=4, passed=4, case_passed=True, adaptive=True))
    head = snap("h", CaseSnapshot(id="a", runs=2, passed=0, case_passed=False, adaptive=True),
                CaseSnapshot(id="k", runs=5, passed=4, case_passed=True, adaptive=True))
    rows = {c.id: c for c in compare(base, head).cases}
    assert rows["a"].verdict == "regressed" and rows["a"].adaptive and rows["a"].p_value is None
    assert rows["k"].verdict == "unchanged" and rows["k"].q_value is None


def test_class_changes_new_reasons_and_changed_content_are_reported() -> None:
    base = snap("b", CaseSnapshot(id="a", runs=20, passed=20, label="stable", content_hash="aaa",
                                  failure_reasons=["equals: expected 1"]))
    head = snap("h", CaseSnapshot(id="a", runs=20, passed=15, label="flaky", content_hash="bbb",
                                  failure_reasons=["equals: expected 1", "timeout: Timeout: 2s", "(other reasons)"]))
    row = compare(base, head).cases[0]
    assert row.content_changed and row.class_change is not None
    assert (row.class_change.base, row.class_change.head) == ("stable", "flaky")
    assert row.new_failure_reasons == ["timeout: Timeout: 2s"]
    same = compare(base, base).cases[0]
    assert not same.content_changed and same.class_change is None and same.new_failure_reasons == []


def test_a_report_becomes_a_snapshot_without_skipped_runs() -> None:
    flaky = case_stats("a", [run(1), run(2, "failed"), run(3, "skipped")], content_hash="f00",
                       failure_reasons=[FailureReason(reason="equals: expected 'ok'", count=1)])
    report = sweep_report([flaky], sweep_id="s1", started_at="2026-11-01T02:00:00Z", tags={"branch": "main"})
    snapshot = snapshot_of(report)
    assert snapshot.sweep_id == "s1" and snapshot.tags == {"branch": "main"}
    (case,) = snapshot.cases
    assert (case.runs, case.passed, case.label, case.content_hash) == (2, 1, "flaky", "f00")
    assert case.failure_reasons == ["equals: expected 'ok'"] and not case.adaptive


def test_the_json_document_has_spec_12s_shape() -> None:
    doc = compare(snap("b", ("a", 30, 30), ("gone", 1, 1)), snap("h", ("a", 30, 12))).model_dump(mode="json")
    assert {"base", "head", "alpha", "cases", "summary"} <= set(doc)
    assert set(doc["base"]) == {"sweep_id", "started_at", "tags"} and doc["alpha"] == 0.1
    assert set(doc["summary"]) == {"regressed", "improved", "unchanged", "inconclusive", "new", "removed", "not_run"}
    row = doc["cases"][0]
    assert {"id", "base", "head", "delta", "p_value", "q_value", "verdict", "content_changed"} <= set(row)
    assert row["base"] == {"runs": 30, "passed": 30} and row["delta"] == -60.0
    assert doc["cases"][1]["head"] is None and doc["cases"][1]["verdict"] == "removed"


def test_bad_parameters_are_settings_errors() -> None:
    with pytest.raises(SettingsError, match="--alpha"):
        compare(snap("b"), snap("h"), alpha=0.6)
    with pytest.raises(SettingsError, match="--min-drop"):
        compare(snap("b"), snap("h"), min_drop=-1)


# ------------------------------------------------------------------------------- simulations


@pytest.mark.slow
def test_unchanged_suites_rarely_flag_a_regression() -> None:
    # The bar (benchmarks/bench_compare.py runs it at full size): at most 10 % of
    # comparisons of unchanged suites (p spread over 0.5–1.0, 30 runs) flag any case.
    result = false_alarms(comparisons=20, cases=60, runs=30, seed=20261101)
    assert result.rate <= 0.10


@pytest.mark.slow
def test_real_drops_are_found_and_unchanged_cases_are_left_alone() -> None:
    # 95 % → 75 % at 50 runs: at least 80 % of the drops flagged, at most 3 unchanged cases per suite.
    result = power(trials=5, cases=40, dropping=20, runs=50, seed=20261101)
    assert result.rate >= 0.80
    assert max(result.unchanged_flagged) <= 3


def test_semantic_consistency_is_noted_only_when_it_moved() -> None:
    from farm.reports.comparison import render_text

    def side(sweep_id: str, moved: float) -> SweepSnapshot:
        return snap(sweep_id, CaseSnapshot(id="same", runs=20, passed=20, semantic_consistency=1.0),
                    CaseSnapshot(id="moved", runs=20, passed=20, semantic_consistency=moved))

    text = render_text(compare(side("b", 0.9), side("h", 0.4)), show_all=True)
    assert "semantic consistency 0.90 → 0.40" in text
    assert "semantic consistency 1.00 → 1.00" not in text  # unmoved: no note


def test_an_unchanged_verdict_states_the_largest_drop_it_rules_out() -> None:
    from farm.stats.significance import newcombe_interval

    result = compare(snap("b", ("same", 200, 200), ("few", 50, 40)), snap("h", ("same", 200, 199), ("few", 50, 41)))
    same, few = result.cases
    assert same.verdict == "unchanged" and few.verdict == "inconclusive"
    low, _ = newcombe_interval(199, 200, 200, 200, z_for(result.alpha))
    assert same.rules_out_drop == 1.7 and 1.6 < -low * 100 <= 1.7  # the interval's low end, rounded up
    assert few.rules_out_drop is None  # only an unchanged verdict rules a drop out
    from farm.reports.comparison import render_text

    assert "rules out a drop over 1.7 points" in render_text(result, show_all=True)


def test_a_path_gone_entirely_at_many_runs_is_a_change_not_a_p_of_one() -> None:
    """The tail of a huge change underflows to p = 0.0: the strongest evidence, never read as 1."""
    from farm.stats.path_change import PathCount

    def side(sweep_id: str, path: list[str]) -> SweepSnapshot:
        # the path counts alone feed the path test (runs and passes small: Boschloo's cost is not this test's)
        case = CaseSnapshot(id="c", runs=20, passed=20, paths=[PathCount(path=path, count=2000)])
        return SweepSnapshot(sweep_id=sweep_id, cases=[case])

    (row,) = compare(side("b", ["search", "answer"]), side("h", ["delete", "answer"])).cases
    assert row.path_changed is True and row.path_q_value == 0.0
