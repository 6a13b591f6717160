"""A ``RunResult`` is data once made: whoever needs it changed builds a new value (issue 25, item 5)."""

from __future__ import annotations

from farm.models import Case, CheckOutcome, ErrorInfo, RunResult, RunStatus
from farm.stats import CaseAccumulator, CasePlan


def _unclassed(status: RunStatus) -> RunResult:
    """A result made before runs were classed (an older journal's, say): no failure class yet."""
    error = ErrorInfo(type="Timeout", message="too slow") if status is RunStatus.TIMEOUT else None
    checks = [CheckOutcome(name="contains", passed=False, message="missing 'AI'")] if status is RunStatus.FAILED else []
    return RunResult(case_id="c", run=1, status=status, error=error, checks=checks)


def test_counting_an_unclassed_run_classes_it_in_the_statistics_and_leaves_the_result_as_given() -> None:
    given = _unclassed(RunStatus.TIMEOUT)
    before = given.model_dump()
    acc = CaseAccumulator(Case(id="c", format="yao", turns=[], input="hi"), CasePlan(runs=1, required=1))
    assert acc.add(given)
    assert given.model_dump() == before and given.failure_class is None  # the caller's value is not changed
    classes = acc.stats().failure_classes
    assert list(classes) == ["timeout"] and classes["timeout"].count == 1


def test_classified_builds_a_new_value() -> None:
    from farm.models.failure_class import classified, classify_run

    given = _unclassed(RunStatus.FAILED)
    made = classified(given)
    assert (made.failure_class, made.failed_turn) == classify_run(given) and made.failure_class is not None
    assert given.failure_class is None and made.model_copy(update={"failure_class": None, "failed_turn": None}) == given
