"""Trajectories over runs (SPEC 21): the distinct tool-call paths of a case, how often each was
taken and passed, how consistent the path is, and where failing runs leave the passing path.

A run's path is the names of its tool calls in order (``RunResult.trajectory``); a run without
calls has the empty path. Memory: one counter pair per distinct path, at most
``MAX_DISTINCT_PATHS`` of them (later new paths are counted but not told apart).
"""

from __future__ import annotations

from collections.abc import Sequence

from farm.models import Divergence, RunResult, RunStatus, ToolCall, TrajectoryPath, run_status
from farm.stats.measures import round_ratio_half_up
from farm.stats.outputs import bounded, bounded_text

__all__ = ["MAX_DETAIL_CALLS", "MAX_LISTED_PATHS", "TrajectoryTally", "divergence", "recorded_calls"]

MAX_RUN_CALLS = 200
"""Calls a run records with their arguments; later ones keep their name only."""
MAX_ARGUMENT_CHARS = 1000
"""A recorded call's arguments and error are cut to this many characters."""
MAX_DETAIL_CALLS = 50
"""Calls a kept run detail shows (``RunDetail.trajectory``); its paths are counted whole."""
MAX_PATH_STEPS = 100
"""Steps of a path told apart; a longer path ends in ``…`` (its further calls are pooled)."""
MAX_DISTINCT_PATHS = 1000
MAX_LISTED_PATHS = 20
"""Paths a case lists in ``trajectories``, most common first."""

Path = tuple[str, ...]


def recorded_calls(calls: Sequence[ToolCall]) -> list[ToolCall] | None:
    """What a run keeps of its calls: name, bounded arguments and error (results are the agent's
    business); None when it made none."""
    if not calls:
        return None
    return [ToolCall(name=c.name, arguments=bounded(c.arguments, MAX_ARGUMENT_CHARS) if n < MAX_RUN_CALLS else None,
                     error=bounded_text(c.error, MAX_ARGUMENT_CHARS)) for n, c in enumerate(calls)]


def path_of(calls: Sequence[ToolCall] | None) -> Path:
    names = tuple(c.name for c in calls or ())
    return names if len(names) <= MAX_PATH_STEPS else (*names[:MAX_PATH_STEPS], "…")


class TrajectoryTally:
    """Counts, per distinct path, the scored runs that took it and those that passed."""

    def __init__(self) -> None:
        self._paths: dict[Path, list[int]] = {}
        self._pooled = 0
        self._runs = 0
        self._any_call = False

    def add(self, result: RunResult) -> None:
        status = run_status(result.status)
        if status is RunStatus.SKIPPED:
            return
        path = path_of(result.trajectory)
        self._runs += 1
        self._any_call = self._any_call or bool(path)
        counts = self._paths.get(path)
        if counts is None:
            if len(self._paths) >= MAX_DISTINCT_PATHS:
                self._pooled += 1
                return
            counts = self._paths[path] = [0, 0]
        counts[0] += 1
        counts[1] += status is RunStatus.PASSED

    def _ranked(self) -> list[tuple[Path, list[int]]]:
        # most common first; ties by path, so every order of arrival ranks alike
        return sorted(self._paths.items(), key=lambda item: (-item[1][0], item[0]))

    def figures(self) -> dict[str, object]:
        """``trajectories``, ``trajectory_consistency`` and ``divergence`` of ``CaseStats``."""
        if not self._any_call:
            return {}
        ranked = self._ranked()
        listed = [TrajectoryPath(path=list(p), count=n, share=round_ratio_half_up(n, self._runs, 3), passed=ok)
                  for p, (n, ok) in ranked[:MAX_LISTED_PATHS]]
        return {"trajectories": listed, "trajectory_consistency": round_ratio_half_up(ranked[0][1][0], self._runs, 3),
                "divergence": divergence({p: (n, ok) for p, (n, ok) in ranked})}


def divergence(paths: dict[Path, tuple[int, int]]) -> Divergence | None:
    """Where failing runs first leave the reference path (the most common passing path; with no
    passing run, the most common path): the step most of them leave it at (the earliest of equals),
    and how many leave there. ``paths``: path → (runs, passed runs)."""
    ranked = sorted(paths.items(), key=lambda item: (-item[1][1], -item[1][0], item[0]))
    if not ranked:
        return None
    passing = [item for item in ranked if item[1][1] > 0]
    reference = passing[0][0] if passing else min(paths, key=lambda p: (-paths[p][0], p))
    at_step: dict[int, int] = {}
    for path, (runs, passed) in paths.items():
        if runs > passed and path != reference:
            step = _common_prefix(path, reference) + 1
            at_step[step] = at_step.get(step, 0) + runs - passed
    if not at_step:
        return None
    step = min(at_step, key=lambda s: (-at_step[s], s))
    return Divergence(step=step, count=at_step[step], path=list(reference))


def _common_prefix(a: Path, b: Path) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
