"""Per-criterion scorecard of a case (SPEC 17): every check of every turn, counted over the runs.

``evaluate_turn`` evaluates all checks of a turn on every run, in the turn's order (assertions,
then stock tests), each outcome tagged with its turn. So the k-th outcome of turn t in a run's
``checks`` is check ``t.k`` of the case. A check is counted for each run that reached its turn
(the agent answered it); a run whose turn was answered but whose checks did not finish (a check
timeout) counts as not meeting them. Memory: two counters per check, never per run. Dynamic
cases keep their ``checkpoints`` figures instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from farm.models import Assertion, Case, RunResult, RunStatus, StockTest, run_status
from farm.models.criteria import CriterionStats
from farm.stats.judge_trust import disagree, flip_counts
from farm.stats.measures import label_for, percent, wilson_percent

__all__ = ["CriteriaTally", "criterion_text", "failing_criteria"]

MAX_VALUE_CHARS = 60
"""A criterion's value is cut to this many characters: it names the check, the case holds it whole."""


def _value_text(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def criterion_text(check: Assertion | StockTest) -> str:
    """What ``check`` asks, for people: ``json_path $.city == Rome``, ``not contains bye``,
    ``structure.answer value 42``."""
    if isinstance(check, StockTest):
        target = ".".join([check.target, *check.key])
        return " ".join([target, check.test, *(_value_text(v) for v in check.values)])
    head = f"not {check.type}" if check.negate else check.type
    if check.type == "json_path":
        tail = f"{check.path} == {_value_text(check.value)}" if check.has_value else f"{check.path}"
    elif check.type == "script":
        tail = check.script or ""
    elif check.type == "trajectory" and isinstance(check.value, dict) and isinstance(check.value.get("tools"), list):
        names = [t.get("name") if isinstance(t, dict) else t for t in check.value["tools"]]
        tail = f"{check.value.get('match', 'strict')} {_value_text(' → '.join(map(str, names)) or '[]')}"
    else:
        tail = _value_text(check.value) if check.has_value or check.value is not None else ""
    return f"{head} {tail}".rstrip()


class _Criterion:
    __slots__ = ("criterion", "flipped", "id", "kind", "passed", "runs", "turn", "voted")

    def __init__(self, turn: int, index: int, check: Assertion | StockTest) -> None:
        self.id = f"{turn}.{index}"
        self.turn = turn
        self.kind = check.test if isinstance(check, StockTest) else check.type
        self.criterion = criterion_text(check)
        self.runs = self.passed = 0
        self.voted = self.flipped = 0  # --confirm-failures: runs whose check was judged k times, and
        # those whose k verdicts disagreed (SPEC 23)


class CriteriaTally:
    """Counts, per check of ``case``, the runs that reached its turn and those that met it."""

    def __init__(self, case: Case) -> None:
        self._turns: list[list[_Criterion]] = []
        if case.dynamic is not None:
            return
        for turn, spec in enumerate(case.turns, start=1):
            checks: list[Assertion | StockTest] = [*spec.assertions, *spec.stock_tests]
            self._turns.append([_Criterion(turn, n, check) for n, check in enumerate(checks, start=1)])

    def add(self, result: RunResult) -> None:
        if not self._turns or run_status(result.status) is RunStatus.SKIPPED:
            return
        for turn, criteria in enumerate(self._turns[: result.turns_completed], start=1):
            checks = [c for c in result.checks if c.turn == turn]
            for n, criterion in enumerate(criteria):
                criterion.runs += 1
                criterion.passed += n < len(checks) and checks[n].passed
                votes = checks[n].judge_votes if n < len(checks) else None
                if votes is not None and len(votes) > 1:
                    criterion.voted += 1
                    criterion.flipped += disagree(votes)

    def stats(self) -> list[CriterionStats]:
        return [_stats(c) for criteria in self._turns for c in criteria]


def _stats(c: _Criterion) -> CriterionStats:
    stats = CriterionStats(
        id=c.id, criterion=c.criterion, kind=c.kind, turn=c.turn, runs=c.runs, passed=c.passed,
        pass_rate=percent(c.passed, c.runs), pass_rate_ci=wilson_percent(c.passed, c.runs),
        label=label_for(c.passed, c.runs),
    )
    if c.voted:
        # the votes are of failed first verdicts only: a rough figure, replaced by a judge-check's
        flips = flip_counts(c.voted, c.flipped)
        stats.judge_flip_rate, stats.judge_noisy, stats.judge_flips_from = (
            flips.judge_flip_rate, flips.judge_noisy, "votes")
    return stats


def failing_criteria(criteria: Iterable[CriterionStats]) -> list[CriterionStats]:
    """The criteria some run that reached them did not meet."""
    return [c for c in criteria if c.passed < c.runs]
