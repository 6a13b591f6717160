"""Compare two sweeps case by case: verdicts exactly as SPEC 12 states them.

A sweep is compared as a ``SweepSnapshot`` (made from a ``SweepReport`` here, or from the history
store's rows), so a JSON report file and a recorded sweep compare alike. Per case:

- ``new`` / ``removed`` when one side lacks the case; ``not_run`` when the side that lacks it did
  not finish (interrupted, stopped, failed: ``SweepSnapshot.partial``), so its absence says nothing;
- a case of an adaptive sweep (either side) is compared on its verdict only (passed → failed is
  ``regressed``), flagged ``adaptive``: stopping early biases its pass rate;
- ``regressed`` when the one-sided exact test of "HEAD passes less often" has a BH q-value
  ≤ ``alpha`` and the drop is at least ``min_drop`` points; ``improved`` symmetrically;
- ``unchanged`` when the two-sided (1 − 2·alpha) Newcombe interval of the difference lies within
  ±``min_drop`` points; otherwise ``inconclusive``.

``p_value``/``q_value`` are those of the direction the pass rate moved (the regression test when
it did not move). Each direction's q-values are adjusted over the cases tested in that direction's
family (every case with runs on both sides that is not adaptive). Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from pydantic import Field

from farm.defaults import DEFAULT_ALPHA, DEFAULT_MIN_DROP
from farm.models import FarmModel, ServedCounts, SweepReport, SweepStatus
from farm.models.base import empty_list
from farm.stats.compare_criteria import CriterionCount, CriterionMove, counts_of, moved_criteria
from farm.stats.compare_terms import check_thresholds, is_adaptive
from farm.stats.path_change import PathCount, PathShift, path_p_value, path_shift, paths_of
from farm.stats.reasons import OTHER_REASONS
from farm.stats.served_change import served_figures
from farm.stats.significance import bh_q_values, newcombe_interval, settled_p_lower, z_for

Verdict = Literal["regressed", "improved", "unchanged", "inconclusive", "new", "removed", "not_run"]
VERDICTS: tuple[Verdict, ...] = ("regressed", "improved", "unchanged", "inconclusive", "new", "removed", "not_run")


class CaseSnapshot(FarmModel):
    """What a comparison needs of one case of one sweep."""

    id: str
    runs: int
    """Scored runs (skipped ones left out)."""
    passed: int
    label: str = ""
    case_passed: bool = True
    content_hash: str | None = None
    failure_reasons: list[str] = Field(default_factory=empty_list)
    adaptive: bool = False
    criteria: list[CriterionCount] = Field(default_factory=empty_list)
    semantic_consistency: float | None = None
    paths: list[PathCount] | None = None
    """Runs per tool-call path (SPEC 21); None: not known (a sweep recorded without them)."""
    served: ServedCounts | None = None
    """Runs per served model and fingerprint (SPEC 25); None: none reported or recorded."""


class SweepRef(FarmModel):
    """Which sweep a side of a comparison is."""

    sweep_id: str | None
    started_at: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)


class SweepSnapshot(SweepRef):
    """A sweep as a comparison sees it."""

    cases: list[CaseSnapshot]
    partial: bool = False
    """The sweep did not finish (``metadata.status`` not ``complete``): a case it lacks was not run."""

    def ref(self) -> SweepRef:
        return SweepRef(sweep_id=self.sweep_id, started_at=self.started_at, tags=dict(self.tags))


class Counts(FarmModel):
    runs: int
    passed: int


class ClassChange(FarmModel):
    base: str
    head: str


class CaseComparison(FarmModel):
    """One row of ``cases`` in SPEC 12's JSON, plus the class change and the new failure reasons."""

    id: str
    base: Counts | None
    head: Counts | None
    delta: float | None
    """HEAD's pass rate minus BASE's, in points."""
    p_value: float | None
    q_value: float | None
    verdict: Verdict
    content_changed: bool = False
    adaptive: bool = False
    class_change: ClassChange | None = None
    new_failure_reasons: list[str] = Field(default_factory=empty_list)
    criteria_moved: list[CriterionMove] = Field(default_factory=empty_list)
    """The criteria whose pass rate or label changed (``farm.stats.compare_criteria``)."""
    semantic_consistency: tuple[float | None, float | None] | None = None
    """(BASE, HEAD) semantic consistency (SPEC 16) when either side computed it."""
    rules_out_drop: float | None = None
    """An ``unchanged`` verdict's largest drop it rules out, in points (SPEC 25): HEAD's pass rate
    is not that far below BASE's, at the comparison's confidence (the Newcombe interval's low end,
    rounded up to a tenth); None for other verdicts."""
    path_changed: bool | None = None
    """The distribution of tool-call paths differs (SPEC 21; ``farm.stats.path_change``, BH
    q ≤ alpha); None: not tested (a side without known paths or runs)."""
    path_q_value: float | None = None
    path_grew: PathShift | None = None
    """The path whose share grew most, when the paths changed."""
    served_changed: bool | None = None
    """The sides were served by different models or ``system_fingerprint``s (SPEC 25): the verdict
    may be the provider's doing, not the agent's; None: a side reported neither."""
    served: tuple[str, str] | None = None
    """(BASE, HEAD) served models with counts, as text, when they changed."""


class Comparison(FarmModel):
    """SPEC 12's comparison document (``farm compare -o cmp.json``)."""

    base: SweepRef
    head: SweepRef
    alpha: float
    min_drop: float
    cases: list[CaseComparison]
    summary: dict[str, int]

    @property
    def regressed(self) -> bool:
        return self.summary.get("regressed", 0) > 0


def snapshot_of(report: SweepReport) -> SweepSnapshot:
    """A report as a comparison sees it (a JSON report file compares like a recorded sweep)."""
    envelope = report.envelope
    cases = [
        CaseSnapshot(
            id=s.id, runs=s.runs - s.skipped, passed=s.passed, label=s.label, case_passed=s.case_passed,
            content_hash=s.content_hash, failure_reasons=[r.reason for r in s.failure_reasons],
            adaptive=is_adaptive(s, envelope), criteria=counts_of(s.criteria),
            semantic_consistency=s.semantic_consistency, paths=paths_of(s.trajectories, s.runs - s.skipped),
            served=s.served,
        )
        for s in report.results
    ]
    return SweepSnapshot(sweep_id=envelope.sweep_id, started_at=envelope.started_at,
                         tags=dict(envelope.tags), cases=cases,
                         partial=report.outcome.status not in (None, SweepStatus.COMPLETE))


@dataclass
class _Tested:
    """A case with runs on both sides: its two p-values and, later, their q-values."""

    base: CaseSnapshot
    head: CaseSnapshot
    p_lower: float
    p_higher: float
    q_lower: float = 1.0
    q_higher: float = 1.0
    p_paths: float | None = None
    q_paths: float | None = None


def compare(base: SweepSnapshot, head: SweepSnapshot, *, alpha: float = DEFAULT_ALPHA,
            min_drop: float = DEFAULT_MIN_DROP) -> Comparison:
    """Compare HEAD with BASE case by case (HEAD's case order, then the cases it lacks)."""
    check_thresholds(alpha, min_drop)
    z = z_for(alpha)
    base_cases = {c.id: c for c in base.cases}
    head_ids = {c.id for c in head.cases}
    tested = _test(base_cases, head.cases, alpha, min_drop)
    rows = []
    for case in head.cases:
        old = base_cases.get(case.id)
        rows.append(_row(case.id, old, case, tested.get(case.id), alpha, min_drop, z, base.partial))
    rows += [_row(c.id, c, None, None, alpha, min_drop, z, head.partial) for c in base.cases if c.id not in head_ids]
    summary: dict[str, int] = dict.fromkeys(VERDICTS, 0)
    for row in rows:
        summary[row.verdict] += 1
    return Comparison(base=base.ref(), head=head.ref(), alpha=alpha, min_drop=min_drop, cases=rows, summary=summary)


def partial_warnings(comparison: Comparison, base: SweepSnapshot, head: SweepSnapshot) -> list[str]:
    """One line per side that did not finish and lacks cases of the other (verdict ``not_run``)."""
    not_run = comparison.summary.get("not_run", 0)
    sides = [(name, side) for name, side in (("BASE", base), ("HEAD", head)) if side.partial]
    return [f"{name} {side.sweep_id or '(report)'} did not finish: {not_run} case{'' if not_run == 1 else 's'} "
            f"missing from it {'is' if not_run == 1 else 'are'} not_run, not new or removed"
            for name, side in sides if not_run]


def _test(base_cases: dict[str, CaseSnapshot], head_cases: Sequence[CaseSnapshot], alpha: float,
          min_drop: float) -> dict[str, _Tested]:
    pairs = [(base, head) for head in head_cases if (base := base_cases.get(head.id)) is not None
             and not (base.adaptive or head.adaptive or not base.runs or not head.runs)]
    threshold = Fraction(str(min_drop))
    deltas = [_delta(base, head) for base, head in pairs]
    # each direction's p-values at once; exact (scipy's) wherever the verdict could hang on the difference
    lower = settled_p_lower([(h.passed, h.runs, b.passed, b.runs) for b, h in pairs],
                            [-d >= threshold for d in deltas], alpha)
    higher = settled_p_lower([(b.passed, b.runs, h.passed, h.runs) for b, h in pairs],
                             [d >= threshold for d in deltas], alpha)
    tested = {head.id: _Tested(base, head, p_lower, p_higher)
              for (base, head), p_lower, p_higher in zip(pairs, lower, higher, strict=True)}
    family = list(tested.values())
    for t, q in zip(family, bh_q_values([t.p_lower for t in family]), strict=True):
        t.q_lower = q
    for t, q in zip(family, bh_q_values([t.p_higher for t in family]), strict=True):
        t.q_higher = q
    for t in family:
        if t.base.paths is not None and t.head.paths is not None:
            t.p_paths = path_p_value(t.base.paths, t.head.paths)
    with_paths = [t for t in family if t.p_paths is not None]
    # a p-value of 0.0 (a tail that underflows: a path gone entirely) is the strongest evidence, never 1
    p_values = [t.p_paths if t.p_paths is not None else 1.0 for t in with_paths]
    for t, q in zip(with_paths, bh_q_values(p_values), strict=True):
        t.q_paths = q
    return tested


def _row(case_id: str, base: CaseSnapshot | None, head: CaseSnapshot | None, tested: _Tested | None,
         alpha: float, min_drop: float, z: float, lacking_side_partial: bool = False) -> CaseComparison:
    if base is None or head is None:
        one_sided: Verdict = "not_run" if lacking_side_partial else "new" if base is None else "removed"
        return CaseComparison(id=case_id, base=_counts(base), head=_counts(head), delta=None, p_value=None,
                              q_value=None, verdict=one_sided)
    delta = _delta(base, head)
    adaptive = base.adaptive or head.adaptive
    p = q = None
    verdict: Verdict
    if adaptive:
        verdict = _verdict_only(base, head)
    elif tested is None:  # a side without runs: nothing to test
        verdict = "inconclusive"
    else:
        verdict = _verdict(base, head, tested, delta, alpha, min_drop, z)
        p, q = (tested.p_higher, tested.q_higher) if delta > 0 else (tested.p_lower, tested.q_lower)
    return CaseComparison(
        id=case_id, base=_counts(base), head=_counts(head), delta=_points(delta), p_value=_sig(p),
        q_value=_sig(q), verdict=verdict, adaptive=adaptive,
        content_changed=bool(base.content_hash and head.content_hash and base.content_hash != head.content_hash),
        class_change=ClassChange(base=base.label, head=head.label) if base.label != head.label else None,
        new_failure_reasons=[r for r in head.failure_reasons if r not in base.failure_reasons and r != OTHER_REASONS],
        criteria_moved=moved_criteria(base.criteria, head.criteria, min_drop),
        semantic_consistency=_semantic_pair(base, head), **_path_figures(tested, alpha),  # type: ignore[arg-type]
        rules_out_drop=_ruled_out(base, head, z) if verdict == "unchanged" and not adaptive else None,
        **served_figures(base.served, head.served),  # type: ignore[arg-type]
    )


def _ruled_out(base: CaseSnapshot, head: CaseSnapshot, z: float) -> float:
    low, _ = newcombe_interval(head.passed, head.runs, base.passed, base.runs, z)
    return max(0.0, math.ceil(round(-low * 1000, 6)) / 10)  # rounded up: never claims more than shown


def _path_figures(tested: _Tested | None, alpha: float) -> dict[str, object]:
    if tested is None or tested.q_paths is None or tested.base.paths is None or tested.head.paths is None:
        return {}
    changed = tested.q_paths <= alpha
    return {"path_changed": changed, "path_q_value": _sig(tested.q_paths),
            "path_grew": path_shift(tested.base.paths, tested.head.paths) if changed else None}


def _semantic_pair(base: CaseSnapshot, head: CaseSnapshot) -> tuple[float | None, float | None] | None:
    if base.semantic_consistency is None and head.semantic_consistency is None:
        return None
    return base.semantic_consistency, head.semantic_consistency


def _verdict(base: CaseSnapshot, head: CaseSnapshot, tested: _Tested, delta: Fraction, alpha: float,
             min_drop: float, z: float) -> Verdict:
    threshold = Fraction(str(min_drop))
    if tested.q_lower <= alpha and -delta >= threshold:
        return "regressed"
    if tested.q_higher <= alpha and delta >= threshold:
        return "improved"
    low, high = newcombe_interval(head.passed, head.runs, base.passed, base.runs, z)
    if low * 100 >= -min_drop and high * 100 <= min_drop:
        return "unchanged"
    return "inconclusive"


def _verdict_only(base: CaseSnapshot, head: CaseSnapshot) -> Verdict:
    if base.case_passed and not head.case_passed:
        return "regressed"
    if head.case_passed and not base.case_passed:
        return "improved"
    return "unchanged"


def _counts(case: CaseSnapshot | None) -> Counts | None:
    return None if case is None else Counts(runs=case.runs, passed=case.passed)


def _delta(base: CaseSnapshot, head: CaseSnapshot) -> Fraction:
    """HEAD's rate minus BASE's in points, exactly (a 95 % → 85 % drop is 10, not 9.999…)."""
    return _rate(head) - _rate(base)


def _rate(case: CaseSnapshot) -> Fraction:
    return Fraction(100 * case.passed, case.runs) if case.runs else Fraction(0)


def _points(delta: Fraction) -> float:
    return round(float(delta), 1)


def _sig(value: float | None) -> float | None:
    """Four significant digits: enough to read, and a tiny p-value stays visible (not 0.0)."""
    return None if value is None else float(f"{value:.4g}")
