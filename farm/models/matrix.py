"""A matrix sweep's data (SPEC 22): its arms, each arm's summary, and the verdicts against the baseline.

An arm is one agent under test: an agent reference (as ``-n`` takes it), a connector and options
(``model``, ``temperature``, …). A matrix sweep plans every case once per arm; the planned copy's
id is ``arm_case_id(case, arm)`` (the plan, Redis and the journal key runs by it) and its
``Case.arm`` names the arm. The finished report gives every result back its own id beside its
``arm`` (``farm.matrix.report``). Typed sections of ``SweepReport``, never metadata keys.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from farm.models.base import FarmModel, JsonValue, empty_list

ARM_SEPARATOR = "@"
"""Between a case id and its arm in a planned copy's id; arm names never hold it."""


def arm_case_id(case_id: str, arm: str) -> str:
    """The id of ``case_id``'s planned copy in ``arm`` (``T1@cold``)."""
    return f"{case_id}{ARM_SEPARATOR}{arm}"


def own_case_id(planned_id: str, arm: str | None) -> str:
    """``planned_id`` without its arm (the case's own id); unchanged when it names no arm."""
    suffix = f"{ARM_SEPARATOR}{arm}"
    return planned_id[: -len(suffix)] if arm and planned_id.endswith(suffix) else planned_id


class Arm(FarmModel):
    """One arm: ``name``, the agent (as ``-n`` takes it), a connector, options (``--matrix`` only)."""

    name: str
    agent: str
    connector: str | None = None
    options: dict[str, JsonValue] = Field(default_factory=dict)


class MatrixPlan(FarmModel):
    """What a plan knows of its matrix: the arms in order, the baseline arm, the interleaving seed."""

    arms: list[Arm]
    baseline: str
    seed: int = 0
    alpha: float = 0.10
    """``--alpha``: the BH false discovery rate of the verdicts (``farm compare``'s)."""
    min_drop: float = 10.0
    """``--min-drop``: the smallest change, in points, a verdict calls ``worse`` or ``better``."""

    @property
    def names(self) -> list[str]:
        return [arm.name for arm in self.arms]


class ArmSummary(FarmModel):
    """One arm's figures over its cases."""

    cases: int
    runs: int
    """Scored runs (skipped left out)."""
    passed: int
    pass_rate: float
    """0–100, run-weighted."""
    pass_rate_ci: tuple[float, float]
    """95 % Wilson interval of ``pass_rate``, 0–100."""
    passed_cases: int
    failed_cases: int
    cost_usd: float | None = None
    """Agent and judge cost; None: unknown for some case."""
    tokens: int | None = None
    """The agent's tokens (input + output); None: none reported."""
    p50_latency_ms: float | None = None
    p95_latency_ms: float | None = None
    """Run durations' median and 95th percentile (from each case's duration histogram: within 5 %)."""


class ArmReport(FarmModel):
    """``arms[]`` of a matrix report."""

    name: str
    agent: str
    connector: str | None = None
    options: dict[str, JsonValue] = Field(default_factory=dict)
    summary: ArmSummary


MatrixVerdict = Literal["better", "worse", "unchanged", "inconclusive", "baseline", "missing"]


class MatrixCell(FarmModel):
    """One case in one arm against the baseline arm (``farm compare``'s test, its verdict renamed)."""

    case: str
    arm: str
    verdict: MatrixVerdict
    """``better``/``worse`` (``improved``/``regressed``), ``unchanged``, ``inconclusive``; ``baseline``
    for the baseline arm's own cell; ``missing`` when either side has no result."""
    runs: int = 0
    passed: int = 0
    delta: float | None = None
    """The arm's pass rate minus the baseline's, in points."""
    p_value: float | None = None
    q_value: float | None = None


class MatrixSection(FarmModel):
    """``matrix`` of a matrix report."""

    baseline: str
    seed: int
    alpha: float
    min_drop: float
    cells: list[MatrixCell]
    """Per case (plan order), per arm (arm order)."""
    worse: dict[str, int] = Field(default_factory=dict)
    """Cases each arm is ``worse`` on; any above 0 is exit 1."""
    pareto_cost: list[str] = Field(default_factory=empty_list)
    """Arms no other arm beats on both pass rate (higher) and cost (lower); empty when a cost is unknown."""
    pareto_latency: list[str] = Field(default_factory=empty_list)
    """Arms no other arm beats on both pass rate and p95 latency."""


__all__ = ["ARM_SEPARATOR", "Arm", "ArmReport", "ArmSummary", "MatrixCell", "MatrixPlan", "MatrixSection",
           "MatrixVerdict", "arm_case_id", "own_case_id"]
