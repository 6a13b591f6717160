"""Models of Yao dynamic (simulator-driven) cases: what a suite asks for and what a run found.

A dynamic case (SPEC 14.1) has a ``simulator`` that plays the user, ``checkpoints`` checked
against every answer of the agent, and ``max_turns``. ``farm.models`` re-exports these models,
and like every model there they round-trip through JSON (they cross Redis inside a ``Case`` or
a ``RunResult``).
"""

from __future__ import annotations

from pydantic import Field

from farm.models.base import Assertion, FarmModel, JsonValue, empty_list

DEFAULT_MAX_TURNS = 20
"""Yao's default ``max_turns``."""


class SimulatorReply(FarmModel):
    """One answer of the simulated user: its next message, or that its goal is achieved."""

    message: str = ""
    goal_achieved: bool = False


class SimulatorSpec(FarmModel):
    """Who plays the user (``simulator`` of a dynamic case)."""

    use: str | None = None
    """An agent reference (as ``-n`` takes), or ``llm:<connector>`` for the built-in LLM simulator.
    None: only ``fixed_responses`` are played."""
    connector: str | None = None
    """``options.connector``: the connector of a prompt-agent simulator."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """``options.metadata``: ``persona``, ``goal`` and any extras, sent in the simulator's input."""
    fixed_responses: list[SimulatorReply] = Field(default_factory=empty_list)
    """Scripted replies played first, in order (a farm extension: deterministic simulated users)."""


class Checkpoint(FarmModel):
    """A point the conversation must reach: its assertions hold on one of the agent's answers."""

    id: str
    description: str | None = None
    assertions: list[Assertion] = Field(default_factory=empty_list)
    """Empty only under ``--yao-compat`` (Yao reaches such a checkpoint at once)."""
    after: list[str] = Field(default_factory=empty_list)
    """Checkpoints that must be reached first."""
    required: bool = True


class DynamicSpec(FarmModel):
    """The dynamic part of a case: simulator, checkpoints in list order, turn limit."""

    simulator: SimulatorSpec
    checkpoints: list[Checkpoint]
    max_turns: int = DEFAULT_MAX_TURNS


class TurnRecord(FarmModel):
    """One turn of a dynamic run: what the user said and what the agent answered."""

    turn: int
    input: JsonValue = None
    """The user's message (the case's input on turn 1, else the simulator's)."""
    output: JsonValue = None
    checkpoints_reached: list[str] = Field(default_factory=empty_list)
    duration_ms: float = 0.0


class CheckpointResult(FarmModel):
    """A checkpoint at the end of one run (Yao's ``CheckpointResult``)."""

    reached: bool = False
    reached_at_turn: int | None = None
    required: bool = True
    passed: bool = False
    message: str = ""
    """The assertion's message when reached, else why its last attempt failed."""


class CheckpointStats(FarmModel):
    """One checkpoint over a case's dynamic runs."""

    id: str
    required: bool
    runs: int
    """Runs that reported this checkpoint."""
    reached: int
    reach_rate: float
    """0–100."""
    reach_rate_ci: tuple[float, float]
    """95 % Wilson interval of the reach rate, 0–100."""
    avg_reached_at_turn: float | None = None
    first_unmet: int = 0
    """Runs in which this was the first required checkpoint not reached (where runs got stuck)."""


__all__ = [
    "DEFAULT_MAX_TURNS",
    "Checkpoint",
    "CheckpointResult",
    "CheckpointStats",
    "DynamicSpec",
    "SimulatorReply",
    "SimulatorSpec",
    "TurnRecord",
]
