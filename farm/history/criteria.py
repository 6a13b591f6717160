"""The per-criterion scorecard in the history store (SPEC 17): rows to record, counts to compare,
and the criteria that moved along a case's trend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, select

if TYPE_CHECKING:
    from farm.history.sweep_info import SweepInfo

from farm.defaults import DEFAULT_MIN_DROP
from farm.history.tables import case_criteria
from farm.models import SweepReport
from farm.stats.compare_criteria import CriterionCount, CriterionMove, moved_criteria

__all__ = ["criteria_counts", "criteria_moves", "criteria_rows", "record_criteria"]


def criteria_rows(sweep_pk: int, report: SweepReport) -> list[dict[str, Any]]:
    return [{"sweep": sweep_pk, "case_id": stats.id, "criterion_id": c.id, "criterion": c.criterion,
             "kind": c.kind, "turn": c.turn, "runs": c.runs, "passed": c.passed, "pass_rate": c.pass_rate,
             "ci_low": c.pass_rate_ci[0], "ci_high": c.pass_rate_ci[1], "label": c.label,
             "judge_flip_rate": c.judge_flip_rate, "judge_noisy": c.judge_noisy}
            for stats in report.results for c in stats.criteria]


def record_criteria(conn: Connection, sweep_pk: int, report: SweepReport) -> None:
    rows = criteria_rows(sweep_pk, report)
    if rows:
        conn.execute(case_criteria.insert(), rows)


def _count(row: Any) -> CriterionCount:
    return CriterionCount(id=row.criterion_id, criterion=row.criterion, runs=row.runs, passed=row.passed,
                          label=row.label, judge_noisy=row.judge_noisy)


def criteria_counts(conn: Connection, sweep_pk: int, judged: Mapping[tuple[str, str], bool] | None = None
                    ) -> dict[str, list[CriterionCount]]:
    """Every case's criteria in one recorded sweep, by case id, in turn and check order; ``judged``:
    ``judge_noisy`` per (case id, criterion id) known since (a later ``farm judge-check`` of the sweep)."""
    query = select(case_criteria).where(case_criteria.c.sweep == sweep_pk)
    counts: dict[str, list[CriterionCount]] = {}
    for row in conn.execute(query):
        count = _count(row)
        if judged and (row.case_id, row.criterion_id) in judged:
            count.judge_noisy = judged[row.case_id, row.criterion_id]
        counts.setdefault(row.case_id, []).append(count)
    for listed in counts.values():
        listed.sort(key=lambda c: tuple(int(part) for part in c.id.split(".")))
    return counts


def criteria_moves(engine: Engine, window: Sequence[SweepInfo], case_id: str | None = None,
                   min_drop: float = DEFAULT_MIN_DROP) -> dict[str, list[CriterionMove]]:
    """Per case of ``window`` (oldest first; or only ``case_id``): the criteria that moved between
    the last two sweeps of the window that ran it (cases with none moved are left out)."""
    position = {info.pk: i for i, info in enumerate(window)}
    query = select(case_criteria).where(case_criteria.c.sweep.in_(list(position)))
    if case_id is not None:
        query = query.where(case_criteria.c.case_id == case_id)
    by_case: dict[str, dict[int, list[CriterionCount]]] = {}
    with engine.connect() as conn:
        for row in conn.execute(query):
            by_case.setdefault(row.case_id, {}).setdefault(position[row.sweep], []).append(_count(row))
    moves = {}
    for case, sweeps_of in by_case.items():
        ran = sorted(sweeps_of)
        if len(ran) >= 2:
            moved = moved_criteria(sweeps_of[ran[-2]], sweeps_of[ran[-1]], min_drop)
            if moved:
                moves[case] = moved
    return moves
