"""A sweep's plan as data: what runs, how often, against which agent, under which settings.

``SweepPlan`` and ``PlannedCase`` are pydantic models (pytest's ``_to_json``/``_from_json``
idea): the in-process executor reads them directly, and a distributed sweep stores them in
Redis as JSON, the sweep-wide part once and every case on its own (so a million-case plan
streams into Redis and a worker reads only the case it runs). The frozen dataclasses they hold
(``RunEnvironment``, ``AgentOptions``, ``AgentRef``, ``CasePlan``) are validated by pydantic
too: no hand-written codecs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, Protocol

from pydantic import Field, PlainValidator, model_validator

from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.matrix.schedule import interleaved
from farm.models import Case, FarmModel, MatrixPlan, PerCaseModel, SweepEnvelope
from farm.models.bundle import BundleRef
from farm.plan.fleet import FleetPlan
from farm.run.environment import RunEnvironment
from farm.settings import DEFAULT_QUEUE
from farm.stats import DEFAULT_MAX_RUN_DETAILS, CasePlan


def new_sweep_id() -> str:
    """Sortable, readable sweep ids: ``20261122T101500-3f2a9c``."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"


class PlannedCase(PerCaseModel):
    """One case of a sweep: the case, its run plan, and the agent it runs against."""

    case: Case
    plan: CasePlan
    agent: AgentRef

    @property
    def id(self) -> str:
        return self.case.id


class CaseSource(Protocol):
    """A plan's cases in plan order, however they are held: ``PlannedCases`` (the models, for an
    in-process sweep) or the stored form a distributed submitter keeps
    (``farm.plan.compact_cases.CompactCases``). Readers never ask which."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[PlannedCase]: ...

    def ids(self) -> list[str]: ...

    def slots(self, env: RunEnvironment) -> Sequence[CaseSlot]:
        """What publishing needs of each case (``CaseSlot``), in plan order."""
        ...

    def json_texts(self) -> Iterator[str]:
        """Each case's JSON text (the journal's plan line)."""
        ...

    def reordered(self, order: Sequence[int]) -> CaseSource:
        """The same cases in ``order`` (indexes into this order), held the same way."""
        ...


class PlannedCases(list[PlannedCase]):
    """A plan's cases as models: what an in-process sweep runs."""

    travels = False
    """Too big to plan in other processes and send back (``farm.plan.batch.CaseKeeper``)."""

    def ids(self) -> list[str]:
        return [c.id for c in self]

    def slots(self, env: RunEnvironment) -> list[CaseSlot]:
        return [CaseSlot.of(c, env) for c in self]

    def json_texts(self) -> Iterator[str]:
        return (c.model_dump_json() for c in self)

    def reordered(self, order: Sequence[int]) -> PlannedCases:
        return PlannedCases(self[i] for i in order)

    def keep(self, case: Case, plan: CasePlan, agent: AgentRef) -> PlannedCase:
        return PlannedCase.checked(case=case, plan=plan, agent=agent)

    def add(self, kept: Iterable[PlannedCase]) -> None:
        self.extend(kept)

    def shareable(self) -> bool:
        return False


def _case_source(value: Any) -> Any:
    """A plain list of cases (a test's, a journal's) becomes ``PlannedCases``; a source stays as it is."""
    return PlannedCases(value) if type(value) in (list, tuple) else value


class SweepPlan(FarmModel):
    """A sweep ready to run. ``cases`` is in-process only: Redis stores each case on its own.

    Frozen: nothing writes a plan once ``farm.api.prepare_sweep`` built it; who adds to it (the
    quarantine, the history, ``--otel``, ``--order``) makes a new one (``with_envelope``)."""

    model_config = FarmModel.model_config | {"frozen": True}

    sweep_id: str
    env: RunEnvironment
    options: AgentOptions
    agent_label: str
    """How reports name the agent (several agents: their labels joined; a matrix: ``arms A, B``)."""
    total_cases: int
    total_runs: int
    runs_per_case: int
    skipped_runs: int = 0
    """Of ``total_runs``, the placeholders of skipped cases: no run is made for them."""
    max_case_timeout_s: float
    """The longest case timeout: bounds how long one run may take."""
    parallel: int = 8
    fail_fast: bool = False
    semantic: bool = True
    """Semantic figures computed (False: ``--no-semantic`` / ``FARM_SEMANTIC=0``, read where the sweep
    is submitted and carried to the workers with the plan; cases' status ``off``)."""
    max_run_details: int = DEFAULT_MAX_RUN_DETAILS
    """Runs kept per case for the report; 0 when no output shows them (JSONL stream, stdout),
    which keeps an in-process sweep's memory flat however many runs it has."""
    envelope: SweepEnvelope = Field(default_factory=SweepEnvelope)
    """What the report's envelope says before the first run (input, ``--runs``, min pass rate,
    fleet switches, history facts, quarantine, ``--otel``); the identity is the plan's own fields."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """The user's own keys for the report's metadata (free-form; the farm adds none)."""
    queue: str = DEFAULT_QUEUE
    started_at: str = ""
    ramp: list[int] | None = None
    """``farm test --ramp``: the concurrency of each level, in order; every case's runs are split
    evenly across them (SPEC 25). None: one level, ``parallel``."""
    matrix: MatrixPlan | None = None
    """A matrix sweep's arms, baseline arm and seed (SPEC 22): its cases come one copy per arm,
    their runs interleaved (``farm.matrix.schedule``); None: not a matrix."""
    fleet: FleetPlan = Field(default_factory=FleetPlan)
    """Rate limits, budget, prices, adaptive runs, caches, record/replay (SPEC 13; no secrets)."""
    bundle: BundleRef | None = None
    """The bundle a distributed sweep's workers run from (SPEC 24, ``farm.bundles``); None: an
    in-process sweep, or ``--no-bundle`` (the workers see the project at the paths the plan names)."""
    cases: Annotated[CaseSource, PlainValidator(_case_source)] = Field(default_factory=PlannedCases, exclude=True)
    """The cases (``CaseSource``), held as whoever built the plan chose; not validated again when
    the plan is built."""

    @model_validator(mode="before")
    @classmethod
    def _envelope_from_metadata(cls, data: Any) -> Any:
        """A plan given its envelope as ``metadata`` keys (a journal of an older farm, a test) types them."""
        if isinstance(data, dict) and isinstance(data.get("metadata"), dict):
            metadata, envelope = SweepEnvelope.split(data["metadata"])
            if envelope:
                given = data.get("envelope")
                given = given.model_dump() if isinstance(given, SweepEnvelope) else given or {}
                data = {**data, "metadata": metadata, "envelope": {**envelope, **given}}
        return data

    @property
    def case_ids(self) -> list[str]:
        return self.cases.ids()

    def with_envelope(self, **fields: Any) -> SweepPlan:
        """A copy of the plan whose envelope has ``fields`` too (the cases are shared)."""
        return self.model_copy(update={"envelope": self.envelope.updated(**fields)})

    def slots(self) -> Sequence[CaseSlot]:
        """What publishing needs of each case, in plan order."""
        return self.cases.slots(self.env)


def plan_runs(plan: SweepPlan) -> Iterator[tuple[PlannedCase, int]]:
    """Every (case, run number) of the plan in the order they are made: case by case, run 1..n;
    a matrix's runs interleaved round by round across its arms (``farm.matrix.schedule``)."""
    if plan.matrix is not None:
        return interleaved(plan.cases, _runs_of, len(plan.matrix.arms), plan.matrix.seed)
    return ((planned, run) for planned in plan.cases for run in range(1, planned.plan.runs + 1))


def _runs_of(planned: PlannedCase) -> int:
    return planned.plan.runs


@dataclass(frozen=True, slots=True)
class CaseSlot:
    """What publishing a case's runs needs, and nothing more: its id, its number of runs, its
    timeout (the runs' Celery time limits). Stored as a compact index beside the cases, so a
    worker topping up a million-case sweep's window reads ids and numbers, not a million cases."""

    id: str
    runs: int
    timeout_s: float

    @classmethod
    def of(cls, planned: PlannedCase, env: RunEnvironment) -> CaseSlot:
        return cls(planned.id, planned.plan.runs, env.case_timeout(planned.case))

    def encode(self) -> str:
        return f"{self.runs} {self.timeout_s!r} {self.id}"

    @staticmethod
    def line(case: Case, plan: CasePlan, env: RunEnvironment) -> str:
        """``CaseSlot.of(planned, env).encode()`` of the ``PlannedCase`` of ``case``, ``plan``, without
        the slot or the planned case (a submitter encodes a million)."""
        return f"{plan.runs} {env.case_timeout(case)!r} {case.id}"

    @classmethod
    def decode(cls, text: str) -> CaseSlot:
        runs, timeout, case_id = text.split(" ", 2)
        return cls(case_id, int(runs), float(timeout))


@dataclass
class PlanTotals:
    """A plan's totals, counted case by case as its cases are planned (a compact plan is not read
    again to count them)."""

    labels: set[str] = field(default_factory=set)
    cases: int = 0
    runs: int = 0
    skipped_runs: int = 0
    most_runs: int = 0
    longest_timeout_s: float = 0.0
    _last_agent: AgentRef | None = field(default=None, repr=False, compare=False)
    """The agent whose label was added last."""

    def add(self, planned: PlannedCase, env: RunEnvironment) -> None:
        self.add_case(planned.case, planned.plan, planned.agent, env)

    def add_case(self, case: Case, plan: CasePlan, agent: AgentRef, env: RunEnvironment, count: int = 1) -> None:
        """``case`` planned ``plan`` against ``agent``; ``count``: the cases planned as it (a listing's plain ones)."""
        if agent is not self._last_agent:  # a batch's cases mostly share one agent: its label once
            self.labels.add(agent.label)
            self._last_agent = agent
        self.cases += count
        self.runs += plan.runs * count
        self.skipped_runs += plan.runs * count if case.skip else 0
        self.most_runs = max(self.most_runs, plan.runs)
        self.longest_timeout_s = max(self.longest_timeout_s, env.case_timeout(case))

    def merge(self, other: PlanTotals) -> None:
        """Another part of the plan's totals (a batch planned apart)."""
        self.labels |= other.labels
        self.cases += other.cases
        self.runs += other.runs
        self.skipped_runs += other.skipped_runs
        self.most_runs = max(self.most_runs, other.most_runs)
        self.longest_timeout_s = max(self.longest_timeout_s, other.longest_timeout_s)


def build_plan(sweep_id: str, cases: CaseSource | Sequence[PlannedCase], *, env: RunEnvironment,
               options: AgentOptions, totals: PlanTotals | None = None, **settings: Any) -> SweepPlan:
    """A plan for ``cases`` with its totals (counted now unless given); ``settings``: the other
    SweepPlan fields."""
    if totals is None:
        totals = PlanTotals()
        for planned in cases:
            totals.add(planned, env)
    labels = sorted(totals.labels)
    matrix = settings.get("matrix")  # a matrix is named by its arms (each arm's agent is in ``arms``)
    label = f"arms {', '.join(matrix.names)}" if matrix else labels[0] if len(labels) == 1 else ", ".join(labels)
    return SweepPlan(
        sweep_id=sweep_id, env=env, options=options, cases=_case_source(cases), agent_label=label,
        total_cases=totals.cases, total_runs=totals.runs, runs_per_case=max(totals.most_runs, 1),
        skipped_runs=totals.skipped_runs,
        max_case_timeout_s=totals.longest_timeout_s, **settings,
    )


__all__ = [
    "CaseSlot", "CaseSource", "PlanTotals", "PlannedCase", "PlannedCases", "SweepPlan", "build_plan", "new_sweep_id",
    "plan_runs",
]
