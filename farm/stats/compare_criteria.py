"""Which criteria of a case moved between two sweeps (SPEC 17): ``farm compare`` and the trends.

A case's verdict says that it moved; its criteria say which check did. A criterion *moved* when
both sweeps ran its turn and its pass rate changed by at least ``min_drop`` points, or its label
changed (stable → flaky, …). Criteria are matched by id (``turn.check``) and by what they check,
so an edited check is not compared with its old self. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from farm.models import FarmModel
from farm.models.criteria import CriterionStats

__all__ = ["CriterionCount", "CriterionMove", "counts_of", "move_text", "moved_criteria"]


class CriterionCount(FarmModel):
    """What a comparison needs of one criterion of one case of one sweep."""

    id: str
    criterion: str
    runs: int
    passed: int
    label: str
    judge_noisy: bool | None = None
    """SPEC 23: the judge's flip rate on this criterion lies above 5 %; None: not known."""


class CriterionMove(FarmModel):
    """One criterion whose pass rate or label changed from BASE to HEAD."""

    id: str
    criterion: str
    base: str
    """``passed/runs`` in BASE."""
    head: str
    delta: float
    """HEAD's pass rate minus BASE's, in points."""
    base_label: str
    head_label: str
    judge_noisy: bool = False
    """The criterion is judge-noisy in BASE or HEAD: its judge may explain the move (SPEC 23)."""


def counts_of(criteria: Sequence[CriterionStats]) -> list[CriterionCount]:
    return [CriterionCount(id=c.id, criterion=c.criterion, runs=c.runs, passed=c.passed, label=c.label,
                           judge_noisy=c.judge_noisy) for c in criteria]


def _rate(c: CriterionCount) -> Fraction:
    return Fraction(100 * c.passed, c.runs) if c.runs else Fraction(0)


def moved_criteria(base: Sequence[CriterionCount], head: Sequence[CriterionCount],
                   min_drop: float) -> list[CriterionMove]:
    """HEAD's criteria that moved since BASE, biggest drop first."""
    before = {(c.id, c.criterion): c for c in base}
    moves = []
    for new in head:
        old = before.get((new.id, new.criterion))
        if old is None or not old.runs or not new.runs:
            continue
        delta = _rate(new) - _rate(old)
        if abs(delta) >= Fraction(str(min_drop)) or old.label != new.label:
            moves.append(CriterionMove(id=new.id, criterion=new.criterion, base=f"{old.passed}/{old.runs}",
                                       head=f"{new.passed}/{new.runs}", delta=round(float(delta), 1),
                                       base_label=old.label, head_label=new.label,
                                       judge_noisy=bool(old.judge_noisy or new.judge_noisy)))
    return sorted(moves, key=lambda m: m.delta)


JUDGE_NOISY_NOTE = "judge-noisy: the judge may explain it (farm judge-check)"


def move_text(m: CriterionMove) -> str:
    """``json_path $.city == Rome 10/10 → 7/10 (-30 points)``; a drop of a judge-noisy criterion
    says so: ``agent says yes 10/10 → 7/10 (-30 points; judge-noisy: …)``."""
    note = f"; {JUDGE_NOISY_NOTE}" if m.judge_noisy and m.delta < 0 else ""
    return f"{m.criterion} {m.base} → {m.head} ({m.delta:+g} points{note})"
