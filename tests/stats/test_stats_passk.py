"""pass@k / pass^k, failure reasons and case fingerprints: the per-case figures history compares."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from farm.models import Assertion, Case, CheckOutcome, ErrorInfo, Message, RunResult, RunStatus, Turn
from farm.stats import CaseAccumulator, CasePlan, case_fingerprint, failure_reasons, pass_at_k, pass_hat_k, pass_ks
from farm.stats.reasons import OTHER_REASONS, ReasonCounter


def brute_force(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    """Every k-subset of n runs (the first c passed): share with some pass, share with all passing."""
    subsets = list(itertools.combinations(range(n), k))
    some = sum(any(i < c for i in s) for s in subsets)
    every = sum(all(i < c for i in s) for s in subsets)
    return Fraction(some, len(subsets)), Fraction(every, len(subsets))


@pytest.mark.parametrize(("n", "c", "k"), [(n, c, k) for n in range(1, 8) for c in range(n + 1) for k in (1, 2, 3, 5)
                                           if k <= n])
def test_estimators_equal_the_share_of_k_subsets(n: int, c: int, k: int) -> None:
    some, every = brute_force(n, c, k)
    assert pass_at_k(n, c, k) == round(float(some), 4)
    assert pass_hat_k(n, c, k) == round(float(every), 4)


def test_undefined_when_fewer_runs_than_k() -> None:
    assert pass_at_k(4, 4, 5) is None and pass_hat_k(4, 4, 5) is None
    assert pass_at_k(0, 0, 1) is None
    assert pass_at_k(5, 5, 5) == 1.0 and pass_hat_k(5, 4, 5) == 0.0


def test_k_one_is_the_pass_rate_and_bad_arguments_raise() -> None:
    assert pass_at_k(30, 21, 1) == pass_hat_k(30, 21, 1) == 0.7
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_hat_k(3, 1, 0)


def test_ks_come_from_the_sweep_metadata() -> None:
    assert pass_ks({}) == (1, 5)
    assert pass_ks({"pass_k": [10, 3, 3]}) == (3, 10)


def _case(case_id: str = "c", value: str = "yes", **fields: object) -> Case:
    turn = Turn(messages=[Message(content="hi")], assertions=[Assertion(type="contains", value=value, has_value=True)])
    return Case(id=case_id, format="yao", turns=[turn], **fields)  # type: ignore[arg-type]


def _failed(run: int, expected: str, actual: str, turn: int = 1) -> RunResult:
    check = CheckOutcome(name="contains", passed=False, message=f"{actual!r} lacks {expected!r}", actual=actual,
                         expected=expected, turn=turn)
    return RunResult(case_id="c", run=run, status=RunStatus.FAILED, checks=[check], output=actual)


def test_a_reason_names_the_check_and_its_expectation_not_the_answer() -> None:
    assert failure_reasons(_failed(1, "yes", "no")) == failure_reasons(_failed(2, "yes", "maybe"))
    assert failure_reasons(_failed(1, "yes", "no")) == ["contains: expected 'yes'"]
    assert failure_reasons(_failed(1, "yes", "no", turn=2)) == ["turn 2 contains: expected 'yes'"]
    error = RunResult(case_id="c", run=1, status=RunStatus.TIMEOUT,
                      error=ErrorInfo(type="Timeout", message="run timed out\n after 2s"))
    assert failure_reasons(error) == ["timeout: Timeout: run timed out after 2s"]
    assert failure_reasons(RunResult(case_id="c", run=1, status=RunStatus.PASSED)) == []
    assert failure_reasons(RunResult(case_id="c", run=1, status=RunStatus.FAILED, output="x" * 500)) == ["failed"]


def test_reason_counter_is_bounded_and_ranks_by_count() -> None:
    counter = ReasonCounter(capacity=2)
    for run, expected in enumerate(["a", "b", "b", "c", "d"], start=1):
        counter.add(_failed(run, expected, "x"))
    assert [(r.reason, r.count) for r in counter.top()] == [
        ("contains: expected 'b'", 2), (OTHER_REASONS, 2), ("contains: expected 'a'", 1)]


def test_the_accumulator_fills_the_new_case_fields() -> None:
    acc = CaseAccumulator(_case(), CasePlan(runs=6, required=6), pass_k=(1, 5))
    for run in (1, 2, 3, 4):
        acc.add(RunResult(case_id="c", run=run, status=RunStatus.PASSED, output=f"yes {run % 2}"))
    acc.add(_failed(5, "yes", "no"))
    acc.add(_failed(6, "yes", "nope"))
    stats = acc.stats()
    assert stats.pass_at_k == {"1": pass_at_k(6, 4, 1), "5": 1.0}
    assert stats.pass_hat_k == {"1": round(4 / 6, 4), "5": 0.0}
    assert stats.distinct_outputs == 4  # "yes 0", "yes 1", "no", "nope"
    assert [(r.reason, r.count) for r in stats.failure_reasons] == [("contains: expected 'yes'", 2)]
    assert stats.content_hash == case_fingerprint(_case())


def test_fingerprint_follows_the_test_not_where_it_is_written() -> None:
    base = case_fingerprint(_case())
    assert case_fingerprint(_case(source="other/file.jsonl", line=40, suite="x", base_dir="/elsewhere")) == base
    assert case_fingerprint(_case(value="no")) != base
    assert case_fingerprint(_case(timeout_s=5.0)) != base
    assert len(base) == 16 and int(base, 16) >= 0
