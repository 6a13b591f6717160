"""Tool calls and the trajectories they make (SPEC 21): a run's calls over all its turns, and
the per-case figures over the runs' paths (``farm.stats.trajectory``)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from farm.models.base import FarmModel, JsonValue, empty_list

__all__ = ["Divergence", "ToolCall", "TrajectoryPath"]


class ToolCall(FarmModel):
    """A tool call the agent made while answering."""

    model_config = ConfigDict(extra="allow")

    name: str
    arguments: JsonValue = None
    result: JsonValue = None
    error: str | None = None


class TrajectoryPath(FarmModel):
    """One distinct path of a case: the tool names its runs called, in order."""

    path: list[str] = Field(default_factory=empty_list)
    """Tool names in call order; ``[]``: runs that called no tool."""
    count: int
    share: float
    """Of the case's scored runs, 0–1."""
    passed: int
    """Runs on this path that passed."""


class Divergence(FarmModel):
    """Where failing runs leave the reference path: the most common passing path (with no passing
    run, the most common path)."""

    step: int
    """1-based step (tool call) at which most failing runs first differ from ``path``."""
    count: int
    """Failing runs that first differ there."""
    path: list[str] = Field(default_factory=empty_list)
    """The reference path."""
