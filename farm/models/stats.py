"""The farm's statistics models: per-case statistics of a sweep, its summary and its report.

``farm.models`` re-exports them; like every model there they round-trip through JSON (a
worker's ``farm.report`` builds a ``SweepReport`` that the submitter reads back).
"""

from __future__ import annotations

import enum
from typing import Any, Literal

from pydantic import Field, SerializationInfo, field_serializer, model_validator

from farm.models.base import CheckOutcome, FarmModel, JsonValue, RunStatus, empty_list
from farm.models.criteria import CriterionStats
from farm.models.dynamic import CheckpointResult, CheckpointStats, TurnRecord
from farm.models.envelope import SweepEnvelope
from farm.models.load import LoadBias, LoadBiasSummary, Ramp
from farm.models.matrix import ArmReport, MatrixSection, arm_case_id
from farm.models.outcome import BudgetFigures, StopReason, SweepOutcome, SweepStatus, split_outcome
from farm.models.served import Served, ServedCounts
from farm.models.trajectory import Divergence, ToolCall, TrajectoryPath

__all__ = [
    "BudgetFigures",
    "CaseStats",
    "FailureClassStats",
    "FailureExample",
    "FailureReason",
    "RunDetail",
    "SemanticCluster",
    "SemanticStatus",
    "StabilityClass",
    "StopReason",
    "SweepOutcome",
    "SweepReport",
    "SweepStatus",
    "SweepSummary",
]


class StabilityClass(enum.StrEnum):
    STABLE = "stable"
    MOSTLY_STABLE = "mostly_stable"
    UNSTABLE = "unstable"
    HIGHLY_UNSTABLE = "highly_unstable"
    BROKEN = "broken"
    """Every run failed: consistent, not random (SPEC 7); the Yao table's classes are for 0 < rate."""


class RunDetail(FarmModel):
    """One run as kept in a case's statistics (bounded: see ``farm.stats``)."""

    run: int
    status: RunStatus
    duration_ms: float
    output: JsonValue = None
    error: str | None = None
    error_type: str | None = None
    """The exception's class name for an ``error`` run (``ErrorInfo.type``)."""
    traceback: str | None = None
    """Bounded traceback, kept once per distinct error of the case (the first run that had it)."""
    failed_checks: list[CheckOutcome] = Field(default_factory=empty_list)
    judged_checks: list[CheckOutcome] = Field(default_factory=empty_list)
    """Judge checks that passed, kept for their verdict and reason (failed ones are above)."""
    retries: int = 0
    failure_class: str | None = None
    failed_turn: int | None = None
    queued_ms: float | None = None
    """Time the run's calls waited for a slot in fleet control (not in ``duration_ms``, SPEC 15)."""
    turns: list[TurnRecord] | None = None
    checkpoints: dict[str, CheckpointResult] | None = None
    trajectory: list[ToolCall] | None = None
    """The run's tool calls over all its turns (name, arguments, error; SPEC 21), the first
    ``farm.stats.trajectory.MAX_DETAIL_CALLS`` of them, arguments cut to 1,000 characters."""
    served: Served | None = None
    """What served the run (SPEC 25); None: nothing reported."""
    in_flight: int | None = None
    """The sweep's runs in flight as the run began, itself included (SPEC 25); None: not known."""

    @property
    def error_line(self) -> str:
        """The error as one line for people: ``ValueError: bad input`` (the type when it says more)."""
        message = self.error or ""
        if self.status is RunStatus.ERROR and self.error_type not in (None, "AgentError"):
            return f"{self.error_type}: {message}"
        return message


class FailureExample(FarmModel):
    """One failed run standing for its failure class."""

    case_id: str
    run: int
    turn: int | None = None
    message: str = ""


class FailureClassStats(FarmModel):
    """How often a failure class occurred, with the first example seen."""

    count: int
    example: FailureExample


class FailureReason(FarmModel):
    """Why runs of a case failed, and how many runs failed that way."""

    reason: str
    """``check: expected …`` for a failed check, ``status: ErrorType: message`` for an error."""
    count: int
    failure_class: str | None = None
    """The failure class of this reason (SPEC 14.2): a reason is a finer grouping of one class."""


SemanticStatus = Literal["computed", "not_installed", "not_text", "off"]
"""Whether a case's (or sweep's) semantic figures were computed, and if not, why (SPEC 16)."""


class SemanticCluster(FarmModel):
    """Answers of one meaning within a case (shaped as ``farm assess``'s modes)."""

    count: int
    share: float
    """Of the case's answering runs, 0–1."""
    example: str
    """The cluster's most frequent answer (normalised, cut to 2,000 characters)."""


class CaseStats(FarmModel):
    """Per-case statistics of a sweep (SPEC 7)."""

    id: str
    suite: str = ""
    source: str = ""
    input: JsonValue = None
    expected: JsonValue = None
    runs: int
    """Runs that finished (any status, skipped included)."""
    passed: int
    failed: int
    """Failed, error and timeout runs."""
    errors: int = 0
    timeouts: int = 0
    skipped: int = 0
    pass_rate: float
    """0–100, of the runs that were not skipped."""
    pass_rate_ci: tuple[float, float]
    """95 % Wilson interval of the pass rate, 0–100."""
    consistency: float
    stable: bool
    stability_class: StabilityClass
    label: Literal["stable", "flaky", "broken", "skipped"]
    """``flaky``: 0 < pass rate < 100; ``broken``: always fails."""
    runs_planned: int | None = None
    """Runs the plan asked for; more than ``runs`` when the sweep stopped before the case finished."""
    required_passes: int
    """Passes needed for the case to pass (from ``success_ratio``, ``--min-pass-rate``)."""
    case_passed: bool
    """The verdict: passes ≥ required_passes (skipped cases: True, counted neither way)."""
    avg_duration_ms: float
    min_duration_ms: float
    max_duration_ms: float
    std_deviation_ms: float
    retries: int = 0
    unreached: int = 0
    """Runs that never reached the agent (``infra:connect``, or its credentials refused: HTTP 401/403/407)."""
    distinct_outputs: int = 0
    """Distinct normalised outputs among the scored runs (errors and timeouts count as one "no
    output"); exact up to ``farm.stats.DEFAULT_MAX_DISTINCT_OUTPUTS``, a lower bound beyond."""
    semantic_consistency: float | None = None
    """Share (0–1) of the answering runs in the largest cluster of meaning (SPEC 16); null when
    not computed (see ``semantic_status``)."""
    semantic_clusters: list[SemanticCluster] | None = None
    """The clusters of meaning, largest first; null when not computed."""
    semantic_status: SemanticStatus | None = None
    """``computed``, ``not_installed`` (the ``[semantic]`` extra is missing where the case was
    aggregated), ``not_text`` (structured answers keep exact comparison) or ``off`` (turned off:
    ``--no-semantic``, ``FARM_SEMANTIC=0``); null: no answer."""
    semantic_estimated: bool = False
    """The case had more distinct answers than ``farm.stats.semantic.SEMANTIC_SAMPLE_CAP``: the
    semantic figures are over the sampled runs only."""
    failure_reasons: list[FailureReason] = Field(default_factory=empty_list)
    """The most frequent reasons runs failed, most frequent first (``farm.stats.reasons``)."""
    pass_at_k: dict[str, float | None] = Field(default_factory=dict)
    """Unbiased pass@k by k (as a string): the chance that at least one of k runs passes,
    1 − C(n−c, k)/C(n, k) over the n scored runs, c passed; None when n < k."""
    pass_hat_k: dict[str, float | None] = Field(default_factory=dict)
    """Unbiased pass^k by k: the chance that all of k runs pass, C(c, k)/C(n, k); None when n < k."""
    usage: dict[str, int] | None = None
    """The agent's tokens over the case's runs (SPEC 13); None: no run reported any."""
    cost_usd: float | None = None
    """What the agent's calls cost over the case's runs; None: unknown for some run."""
    judge_usage: dict[str, int] | None = None
    """Tokens of the case's judge calls, apart; None: no judge was called."""
    judge_cost_usd: float | None = None
    """What the judge calls cost; None: unknown, or no judge was called."""
    cost_per_passing_run: float | None = None
    """Agent and judge cost over the passing runs; None: unknown, or no run passed."""
    adaptive: bool = False
    """``--adaptive``: the case stopped once its verdict was settled, so its pass rate is biased
    by stopping (compare such cases on verdicts only)."""
    decided_after: int | None = None
    """Adaptive: the run that settled the verdict (runs in flight then still count)."""
    adaptive_verdict: Literal["pass", "fail", "inconclusive"] | None = None
    """Adaptive: the rule's verdict; ``inconclusive`` (the SPRT undecided after every planned
    run) counts as failed."""
    runs_saved: int = 0
    """Adaptive: planned runs not made because the verdict was settled."""
    quarantine: dict[str, JsonValue] | None = None
    """The ``farm-quarantine.toml`` entry naming the case (case, owner, reason, until, file, line)
    and its ``status``: ``active`` (the case does not gate) or ``expired`` (SPEC 18)."""
    retry_bias: dict[str, JsonValue] | None = None
    """Runs that needed a transient retry against runs that did not: ``retried_runs``,
    ``retried_pass_rate``, ``clean_pass_rate``, ``q`` (Fisher, BH across cases), ``flagged``."""
    runs_not_run: int = 0
    """Planned runs that did not run and were not saved by an adaptive rule: the sweep stopped, or
    fleet control refused or starved them before their first call (SPEC 15); not in ``runs``."""
    queued_ms: float = 0.0
    """Time the case's runs waited for slots in fleet control, summed (not in any duration)."""
    content_hash: str | None = None
    """Digest of the case as written (turns, checks, input, settings; not its file or line):
    comparisons flag a case whose test changed (``farm.stats.fingerprint``)."""
    run_details: list[RunDetail] = Field(default_factory=empty_list)
    run_details_truncated: int = 0
    """How many runs were counted but not kept in ``run_details``."""
    failure_classes: dict[str, FailureClassStats] = Field(default_factory=dict)
    """Failed runs by failure class (SPEC 14.2), most frequent first."""
    checkpoints: list[CheckpointStats] = Field(default_factory=empty_list)
    """Dynamic cases: each checkpoint's reach rate over the runs, in the case's order."""
    criteria: list[CriterionStats] = Field(default_factory=empty_list)
    """Each check of each turn over the runs, in the case's order (SPEC 17; ``farm.stats.criteria``)."""
    trajectories: list[TrajectoryPath] = Field(default_factory=empty_list)
    """Distinct tool-call paths of the scored runs, most common first (SPEC 21; the first
    ``farm.stats.trajectory.MAX_LISTED_PATHS``); empty when no run called a tool."""
    trajectory_consistency: float | None = None
    """Share (0–1) of the scored runs on the most common path; null when no run called a tool."""
    divergence: Divergence | None = None
    """Where failing runs leave the most common passing path; null: no failing run left it."""
    served: ServedCounts | None = None
    """Runs per served model, ``system_fingerprint`` and agent commit, most first (SPEC 25); null:
    no run reported any."""
    load_bias: LoadBias | None = None
    """The case's runs started under high vs low load (SPEC 25, ``farm.stats.load_bias``); null: no
    run knew its ``in_flight``."""
    arm: str | None = None
    """A matrix sweep's arm the case ran in (SPEC 22); null: not a matrix sweep."""
    duration_histogram: dict[str, int] | None = None
    """Matrix sweeps: runs per duration bucket (``farm.stats.latency``), merged into each arm's
    p50/p95 latency; null elsewhere."""

    @property
    def planned_id(self) -> str:
        """The id the case's runs are kept under: a matrix arm's copy's ``T1@ARM``, else ``id``."""
        return arm_case_id(self.id, self.arm) if self.arm else self.id


class SweepSummary(FarmModel):
    """Sweep-wide figures (SPEC 7)."""

    total_cases: int
    total_runs: int
    """Runs made: a skipped case's placeholder is counted in ``by_status.skipped`` only."""
    runs_per_case: int
    overall_pass_rate: float
    stable_cases: int
    unstable_cases: int
    """Cases that are not stable (Yao's meaning): every flaky and broken case, whatever its
    ``stability_class``; ``classes`` counts the cases of each class."""
    passed_cases: int
    failed_cases: int
    skipped_cases: int
    flaky_cases: int
    broken_cases: int
    duration_ms: float
    by_status: dict[str, int]
    """Run counts by status: passed, failed, error, timeout, skipped."""
    usage: dict[str, int] | None = None
    """The agent's tokens over the sweep (SPEC 13); None: no run reported any."""
    cost_usd: float | None = None
    """What the agent's calls cost; None: unknown for some case."""
    judge_usage: dict[str, int] | None = None
    """Tokens of the judge calls, apart; None: no judge was called."""
    judge_cost_usd: float | None = None
    """What the judge calls cost; None: unknown, or no judge was called."""
    cost_per_passing_run: float | None = None
    """Agent and judge cost over the passing runs; None: unknown, or no run passed."""
    runs_saved: int = 0
    """``--adaptive``: planned runs not made because their cases' verdicts were settled."""
    runs_not_run: int = 0
    """Planned runs that did not run (SPEC 15), summed over the cases."""
    queued_ms: float = 0.0
    """Time runs waited for slots in fleet control (rate, concurrency, budget), summed."""
    failure_classes: dict[str, FailureClassStats] = Field(default_factory=dict)
    """Failed runs of the whole sweep by failure class, most frequent first."""
    classes: dict[str, int] = Field(default_factory=dict)
    """Cases by ``stability_class`` (``stable``, ``mostly_stable``, ``unstable``, ``highly_unstable``,
    ``broken``), skipped cases left out (SPEC 20)."""
    semantic: SemanticStatus | None = None
    """Semantic figures of the sweep (SPEC 16): ``computed`` if any case's were, ``not_installed``
    (``farm.extras.install_hint('semantic')`` says how to get them), ``not_text``, ``off`` (turned off);
    null: no case answered."""
    served: ServedCounts | None = None
    """Runs per served model, ``system_fingerprint`` and agent commit over the sweep (SPEC 25);
    null: no run reported any."""
    load_bias: LoadBiasSummary | None = None
    """The sweep's median ``in_flight`` and the cases that pass at a different rate above it (SPEC
    25); null: no run knew its ``in_flight``, or every run started at the same load."""
    ramp: Ramp | None = None
    """``farm test --ramp``: pass rate, latency, 429s and timeouts per concurrency (SPEC 25);
    null: no ramp."""
    skipped_ids: list[str] = Field(default_factory=empty_list)
    """Cases the suite skips (``skip: true``): counted in ``skipped_cases``, listed here, and given
    no result row, pass rate or stability class (SPEC 10)."""


class SweepReport(FarmModel):
    """The whole report of a sweep: what every renderer takes."""

    summary: SweepSummary
    environment: dict[str, JsonValue]
    arms: list[ArmReport] | None = None
    """A matrix sweep's arms, each with its summary (SPEC 22); null: not a matrix sweep."""
    matrix: MatrixSection | None = None
    """A matrix sweep's verdicts per case and arm against the baseline arm, and its Pareto fronts."""
    results: list[CaseStats]
    """Cases that ran, in plan order; skipped cases are listed in ``summary.skipped_ids`` only."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """The user's own keys: whatever a written-out ``metadata`` holds that is neither the envelope's
    nor the outcome's (the farm writes none of its own here)."""
    envelope: SweepEnvelope = Field(default_factory=SweepEnvelope, exclude=True)
    """The sweep's identity and sections (``sweep_id``, ``agent_id``, ``connector``, ``started_at``,
    ``completed_at``, ``version``, ``comparison``, ``min_pass_rate``, history, quarantine, …).
    Written out (and read back) as keys of ``metadata``; never a key of its own."""
    outcome: SweepOutcome = Field(default_factory=SweepOutcome, exclude=True)
    """How the sweep ended. Written out (and read back) as keys of ``metadata``: ``status``,
    ``stopped``, ``not_run``, ``reason``, ``budget``; never a key of its own."""

    @model_validator(mode="before")
    @classmethod
    def _typed_from_metadata(cls, data: Any) -> Any:
        """A report as written out (or built from a metadata dict) keeps its envelope and outcome in
        ``metadata``; a typed envelope or outcome given wins over the keys."""
        if isinstance(data, dict) and isinstance(data.get("metadata"), dict):
            metadata, outcome = split_outcome(data["metadata"])
            metadata, envelope = SweepEnvelope.split(metadata)
            given = data.get("envelope")
            if isinstance(given, SweepEnvelope):
                given = given.model_dump()
            data = {**data, "metadata": metadata, "envelope": {**envelope, **(given or {})},
                    "outcome": data.get("outcome", outcome)}
        return data

    @field_serializer("metadata")
    def _metadata_with_envelope(self, metadata: dict[str, JsonValue], info: SerializationInfo) -> dict[str, Any]:
        # only this field goes through Python: the results (most of a report) stay on pydantic's fast path
        outcome = self.outcome.model_dump(mode=info.mode)
        return {**self.envelope.written("json" if info.mode_is_json() else "python"), **metadata,
                **{k: v for k, v in outcome.items() if v is not None}}

    def written_metadata(self) -> dict[str, JsonValue]:
        """``metadata`` as the report writes it out: the outcome's keys included (JSON values)."""
        written: dict[str, JsonValue] = self.model_dump(mode="json", include={"metadata"})["metadata"]
        return written
