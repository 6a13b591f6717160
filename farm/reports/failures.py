"""Failure classes and checkpoints as report lines: what the terminal, text and Markdown share.

Every renderer shows the same facts (SPEC 14.2): per sweep and per case, each failure class with
its count and one example run; per dynamic case, each checkpoint's reach rate and interval.
"""

from __future__ import annotations

from farm.models import CheckpointStats, FailureClassStats, FailureExample, SweepReport

__all__ = ["checkpoint_row", "class_counts", "example_text", "failure_lines"]

MAX_CLASSES_INLINE = 3
"""Classes named in one table cell; the rest are counted."""


def class_counts(classes: dict[str, FailureClassStats], limit: int = MAX_CLASSES_INLINE) -> str:
    """``assertion:contains ×3, infra:5xx ×1`` (most frequent first), or ``''``."""
    shown = [f"{name} ×{entry.count}" for name, entry in list(classes.items())[:limit]]
    more = len(classes) - limit
    return ", ".join(shown) + (f", +{more} more" if more > 0 else "")


def example_text(example: FailureExample, *, with_case: bool = True) -> str:
    """``T003 run 2, turn 1: <what went wrong>``."""
    where = f"run {example.run}" + (f", turn {example.turn}" if example.turn else "")
    head = f"{example.case_id} {where}" if with_case else where
    return f"{head}: {example.message}" if example.message else head


def failure_lines(report: SweepReport) -> list[str]:
    """The sweep's failure classes, one line each with its example (none when nothing failed)."""
    classes = report.summary.failure_classes
    if not classes:
        return []
    width = max(len(name) for name in classes)
    lines = ["failures by class:"]
    for name, entry in classes.items():
        lines.append(f"  {entry.count:>5}  {name:<{width}}  e.g. {example_text(entry.example)}")
    return lines


def checkpoint_row(point: CheckpointStats) -> tuple[str, ...]:
    """One checkpoint as table cells: id, required, reached, rate, interval, turn, first unmet."""
    low, high = point.reach_rate_ci
    turn = f"{point.avg_reached_at_turn:g}" if point.avg_reached_at_turn is not None else "-"
    return (point.id, "yes" if point.required else "no", f"{point.reached}/{point.runs}", f"{point.reach_rate}%",
            f"{low}–{high}%", turn, str(point.first_unmet))
