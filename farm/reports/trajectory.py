"""Trajectory figures (SPEC 21) as report text: what Markdown and JUnit share (the HTML report's
script words them alike), so every format says the same thing in the same words."""

from __future__ import annotations

from collections.abc import Sequence

from farm.models import CaseStats
from farm.models.base import JsonValue

__all__ = ["MAX_PATHS_SHOWN", "TRAJECTORY_HEADER", "divergence_text", "path_text", "trajectory_properties",
           "trajectory_rows"]

MAX_PATHS_SHOWN = 5
"""Paths listed per case in Markdown and JUnit; the JSON report keeps more."""

TRAJECTORY_HEADER = ("Path", "Runs", "Share", "Passed")


def path_text(path: Sequence[str]) -> str:
    """``search → fetch → answer``; ``(no tool call)`` for the empty path."""
    return " → ".join(path) if path else "(no tool call)"


def trajectory_rows(stats: CaseStats) -> list[tuple[str, str, str, str]]:
    """(path, runs, share, passed) per shown path, most common first."""
    return [(path_text(p.path), str(p.count), f"{round(p.share * 100, 1)}%", str(p.passed))
            for p in stats.trajectories[:MAX_PATHS_SHOWN]]


def divergence_text(stats: CaseStats) -> str | None:
    """``step 2 (3 failing runs leave search → fetch → answer)``; None without a divergence."""
    d = stats.divergence
    if d is None:
        return None
    runs = "failing run leaves" if d.count == 1 else "failing runs leave"
    return f"step {d.step} ({d.count} {runs} {path_text(d.path)})"


def trajectory_properties(stats: CaseStats) -> dict[str, JsonValue]:
    """JUnit properties: ``trajectory_consistency``, ``divergence_step``/``_count``, and
    ``trajectory_<n>`` = ``path: runs (passed passed)`` for the shown paths."""
    if stats.trajectory_consistency is None:
        return {}
    found: dict[str, JsonValue] = {"trajectory_consistency": stats.trajectory_consistency}
    if stats.divergence is not None:
        found |= {"divergence_step": stats.divergence.step, "divergence_count": stats.divergence.count}
    for n, p in enumerate(stats.trajectories[:MAX_PATHS_SHOWN], start=1):
        found[f"trajectory_{n}"] = f"{path_text(p.path)}: {p.count} ({p.passed} passed)"
    return found
