"""``farm judge-check``'s findings in the history (SPEC 23): recorded per criterion, read back as
each criterion's flip rate over the checks (``farm history``) and as the newest figures a sweep's
scorecard marks (``farm test``, ``farm compare``).

A check is recorded whole in one transaction, one row per criterion, stamped with the time it
was made; the judged sweep's id goes with it but need not be a recorded sweep (a report file can
be judge-checked without its sweep in this history).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, select

from farm.history.record import now_utc
from farm.history.sweep_info import iso
from farm.history.tables import judge_checks
from farm.models import SweepReport

if TYPE_CHECKING:  # the history reads its rows without the judge's machinery
    from farm.judgecheck.run import JudgeCheck

__all__ = ["JudgeCheckPoint", "judge_check_trends", "mark_judge_noise", "newest_judge_checks", "record_judge_check"]


def record_judge_check(engine: Engine, found: JudgeCheck) -> int:
    """Store every criterion of ``found``; the number of rows stored."""
    checked_at = now_utc()
    rows = [{"checked_at": checked_at, "sweep_id": found.sweep_id, "source": found.source, "judge": c.judge,
             "repeats": found.repeats, "case_id": c.case_id, "criterion_id": c.criterion_id, "turn": c.turn,
             "check": c.check, "criterion": c.criterion, "outputs": c.flips.outputs, "flipped": c.flips.flipped,
             "judge_flip_rate": c.flips.judge_flip_rate, "ci_low": c.flips.judge_flip_rate_ci[0],
             "ci_high": c.flips.judge_flip_rate_ci[1], "judge_noisy": c.flips.judge_noisy}
            for c in found.criteria]
    if rows:
        with engine.begin() as conn:
            conn.execute(judge_checks.insert(), rows)
    return len(rows)


@dataclass(frozen=True)
class JudgeCheckPoint:
    """One criterion's figures in one recorded judge check."""

    checked_at: str | None
    sweep_id: str | None
    judge: str
    repeats: int
    outputs: int
    flipped: int
    judge_flip_rate: float | None
    judge_flip_rate_ci: tuple[float, float]
    judge_noisy: bool


def _point(row: Any) -> JudgeCheckPoint:
    return JudgeCheckPoint(iso(row.checked_at), row.sweep_id, row.judge, row.repeats, row.outputs, row.flipped,
                           row.judge_flip_rate, (row.ci_low, row.ci_high), row.judge_noisy)


IN_CHUNK = 1000
"""Case ids asked about per query."""

CriterionKey = tuple[str, int, str, str]
"""(case id, turn, check, criterion): one judged criterion across checks."""


def judge_check_trends(engine: Engine, case_ids: Iterable[str] | None = None, last: int = 20
                       ) -> dict[CriterionKey, tuple[str | None, list[JudgeCheckPoint]]]:
    """Per judged criterion (of ``case_ids``, or every case): its scorecard id and its ``last``
    recorded checks, oldest first."""
    query = select(judge_checks).order_by(judge_checks.c.checked_at, judge_checks.c.id)
    if case_ids is not None:
        query = query.where(judge_checks.c.case_id.in_(list(case_ids)))
    found: dict[CriterionKey, tuple[str | None, list[JudgeCheckPoint]]] = {}
    with engine.connect() as conn:
        for row in conn.execute(query):
            key = (row.case_id, row.turn, row.check, row.criterion)
            criterion_id, points = found.get(key, (None, []))
            found[key] = (row.criterion_id or criterion_id, [*points, _point(row)][-last:])
    return dict(sorted(found.items()))


def newest_judge_checks(engine: Engine, case_ids: Sequence[str], sweep_id: str | None = None
                        ) -> dict[tuple[str, str], JudgeCheckPoint]:
    """Per (case id, scorecard criterion id) of ``case_ids``: the newest recorded check's figures
    (only checks of ``sweep_id`` when given)."""
    found: dict[tuple[str, str], JudgeCheckPoint] = {}
    with engine.connect() as conn:
        for start in range(0, len(case_ids), IN_CHUNK):  # a bound parameter each: databases cap them
            query = (select(judge_checks).where(judge_checks.c.case_id.in_(list(case_ids[start:start + IN_CHUNK])),
                                                judge_checks.c.criterion_id.is_not(None))
                     .order_by(judge_checks.c.checked_at, judge_checks.c.id))
            if sweep_id is not None:
                query = query.where(judge_checks.c.sweep_id == sweep_id)
            found.update({(row.case_id, row.criterion_id): _point(row) for row in conn.execute(query)})
    return found


def mark_judge_noise(engine: Engine, report: SweepReport) -> int:
    """Mark ``report``'s scorecard criteria with the newest recorded ``farm judge-check`` figures of
    each (they replace figures from the sweep's own votes: a judge-check asks about distinct outputs,
    the votes only about failures); the number of criteria marked."""
    from farm.checks import JUDGED_ASSERTIONS, JUDGED_STOCK_TESTS

    judged = JUDGED_ASSERTIONS | JUDGED_STOCK_TESTS
    known = newest_judge_checks(engine, [stats.id for stats in report.results
                                         if any(c.kind in judged for c in stats.criteria)])
    marked = 0
    for stats in report.results:
        for criterion in stats.criteria:
            point = known.get((stats.id, criterion.id))
            if point is not None:
                criterion.judge_flip_rate, criterion.judge_noisy = point.judge_flip_rate, point.judge_noisy
                criterion.judge_flips_from = "judge-check"
                marked += 1
    return marked
