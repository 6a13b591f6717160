"""Failure classes and checkpoints of a case's runs, counted as the runs come in (SPEC 14).

Memory grows with the distinct failure classes and checkpoints of a case, never with its runs:
one counter and one example per class, a few counters per checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterable

from farm.models import CheckpointStats, FailureClassStats, FailureExample, RunResult
from farm.models.failure_class import failure_message
from farm.stats.measures import percent, wilson_percent

__all__ = ["CheckpointTally", "FailureTally", "merge_failure_classes"]


def _ranked(classes: dict[str, FailureClassStats]) -> dict[str, FailureClassStats]:
    """Most frequent first, then by name, so reports list the same order every time."""
    return dict(sorted(classes.items(), key=lambda item: (-item[1].count, item[0])))


class FailureTally:
    """Failed runs by failure class; each class's example is its lowest-numbered run, so the
    statistics do not depend on the order runs arrive in."""

    def __init__(self) -> None:
        self._classes: dict[str, FailureClassStats] = {}

    def add(self, result: RunResult) -> None:
        name = result.failure_class
        if name is None:
            return
        seen = self._classes.get(name)
        if seen is not None:
            seen.count += 1
            if result.run >= seen.example.run:
                return
        example = FailureExample(case_id=result.case_id, run=result.run, turn=result.failed_turn,
                                 message=failure_message(result))
        self._classes[name] = FailureClassStats(count=seen.count if seen else 1, example=example)

    def stats(self) -> dict[str, FailureClassStats]:
        return _ranked({k: v.model_copy(deep=True) for k, v in self._classes.items()})


def merge_failure_classes(per_case: Iterable[dict[str, FailureClassStats]]) -> dict[str, FailureClassStats]:
    """A sweep's failure classes: counts summed, each example from the first case that had it."""
    merged: dict[str, FailureClassStats] = {}
    for classes in per_case:
        for name, entry in classes.items():
            if name in merged:
                merged[name].count += entry.count
            else:
                merged[name] = entry.model_copy(deep=True)
    return _ranked(merged)


class _Checkpoint:
    __slots__ = ("first_unmet", "reached", "required", "runs", "turns")

    def __init__(self, required: bool) -> None:
        self.required = required
        self.runs = self.reached = self.turns = self.first_unmet = 0


class CheckpointTally:
    """Per checkpoint: runs, runs that reached it, at which turn, and where runs got stuck."""

    def __init__(self) -> None:
        self._points: dict[str, _Checkpoint] = {}

    def add(self, result: RunResult) -> None:
        if not result.checkpoints:
            return
        stuck_at = None
        for point_id, found in result.checkpoints.items():
            point = self._points.setdefault(point_id, _Checkpoint(found.required))
            point.runs += 1
            if found.reached:
                point.reached += 1
                point.turns += found.reached_at_turn or 0
            elif found.required and stuck_at is None:
                stuck_at = point
        if stuck_at is not None:
            stuck_at.first_unmet += 1

    def stats(self) -> list[CheckpointStats]:
        return [_checkpoint_stats(point_id, p) for point_id, p in self._points.items()]


def _checkpoint_stats(point_id: str, p: _Checkpoint) -> CheckpointStats:
    return CheckpointStats(
        id=point_id, required=p.required, runs=p.runs, reached=p.reached,
        reach_rate=percent(p.reached, p.runs),
        reach_rate_ci=wilson_percent(p.reached, p.runs),
        avg_reached_at_turn=round(p.turns / p.reached, 2) if p.reached else None,
        first_unmet=p.first_unmet,
    )
