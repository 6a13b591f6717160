"""One batch of a suite planned: selected (``--run``, ``-k``), its judges, simulators and agents
checked, each case planned, and what the plan keeps of it.

``farm.api`` plans a suite batch by batch with a ``BatchPlanner``, and merges each
``BatchPlan`` into the sweep's (``PlanParts.merge``). A large suite's batches may be planned in
other processes (``farm.plan.load_processes``): a ``BatchPlan`` is then what travels back, so it holds
only what the plan keeps (ids for ``--collect-only``, else what the sweep's ``CaseKeeper`` keeps of
each case) and the few cases that errors and judges name. The planner plans; how the plan holds
its cases is the keeper's business, chosen by whoever runs the sweep (``farm.api``: a distributed
submitter keeps them in their stored form). Pure: no Celery, Redis or SQLAlchemy.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.agents.resolve import resolve_case_agent
from farm.checks import judges_needed
from farm.errors import AgentResolutionError, InputError, SettingsError
from farm.matrix.arms import arm_settings
from farm.matrix.schedule import arm_copies
from farm.models import ARM_SEPARATOR, Arm, Case, MatrixPlan
from farm.plan.compact_cases import CompactCases
from farm.plan.sweep_plan import CaseSource, PlannedCases, PlanTotals
from farm.run.environment import RunEnvironment
from farm.run.simulators import check_simulators
from farm.stats import CasePlan, plan_case
from farm.stats.adaptive import AdaptiveRule
from farm.stats.plan import ramp_plan
from farm.suites.file_cases import PlainCase
from farm.wording import plural


class CaseKeeper(CaseSource, Protocol):
    """A plan's ``CaseSource`` as planning fills it: ``PlannedCases`` or ``CompactCases``."""

    travels: bool
    """Whether what it keeps of a case is small enough to plan batches in other processes and
    send them back (then the first batch is planned here: the rest may depend on it)."""

    def keep(self, case: Case, plan: CasePlan, agent: AgentRef) -> Any:
        """What a batch carries of the ``PlannedCase`` of ``case``, ``plan``, ``agent`` (picklable; a
        compact plan never builds the model); ``add`` takes it in."""
        ...

    def add(self, kept: Iterable[Any]) -> None: ...

    def shareable(self) -> bool:
        """Whether other processes can keep cases now (a compact plan: once its dictionary is set)."""
        ...

CaseKeeping = Literal["ids", "stored", "models"]
"""How a plan holds its cases, as the executor that runs it chooses: their ids only
(``--collect-only``), their stored form (a distributed submitter: ``CompactCases``, so a
million-case plan is never a million models), or the ``PlannedCase`` models (an in-process sweep
runs them; ``--dry-run`` lists them)."""


def case_keeper(keeping: CaseKeeping, env: RunEnvironment) -> CaseKeeper | None:
    """The plan's ``CaseKeeper`` for ``keeping`` (None: ``--collect-only`` keeps the ids alone)."""
    if keeping == "ids":
        return None
    return CompactCases(env) if keeping == "stored" else PlannedCases()


AgentKey = tuple[str, str | None, str | None]
_SKIP = operator.attrgetter("skip")


def compile_run_pattern(pattern: str | None) -> re.Pattern[str] | None:
    """Yao's ``--run``: the regular expression a case id must match somewhere (a search, as Go's
    ``MatchString``), after ``-k``; None: every case.

    Raises:
        SettingsError: the pattern is not a regular expression.
    """
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise SettingsError(f"--run {pattern!r}: not a regular expression: {exc}") from None


def _matches(case_id: str, pattern: str) -> bool:
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(case_id, pattern)
    return pattern in case_id


matches_pattern = _matches
"""Whether a case id matches a `-k` pattern (a substring, or a glob when it has * ? [)."""


def exact_pattern(case_id: str) -> str:
    """A ``-k`` glob matching ``case_id`` only (``-k`` alone matches substrings): glob characters
    bracketed, and one other character made a one-letter class so the pattern is a glob (farm
    bisect's probes, ``farm quarantine suggest``'s entries)."""
    escaped = [f"[{ch}]" if ch in "*?[" else ch for ch in case_id]
    if not any(ch in "*?[" for ch in case_id):
        i = next((i for i, ch in enumerate(case_id) if ch not in "!]"), None)
        if i is not None:
            escaped[i] = f"[{case_id[i]}]"
    return "".join(escaped)


class Listable(Protocol):
    """What selection reads of a case: a ``Case``'s, or a listing's unbuilt ``PlainCase``'s."""

    @property
    def id(self) -> str: ...

    @property
    def skip(self) -> bool: ...

    @property
    def skip_reason(self) -> str | None: ...


_L = TypeVar("_L", bound=Listable)


def select_cases(cases: list[_L], patterns: tuple[str, ...]) -> list[_L]:
    """``-k``: the cases whose id matches any pattern (substring, or glob when it has ``*?[``)."""
    if not patterns:
        return cases
    return [c for c in cases if any(_matches(c.id, p) for p in patterns)]


@dataclass
class SelectionCounts:
    """What ``--run`` and ``-k`` let through, counted over the whole suite; ``check()`` raises
    when nothing would run: a sweep that tests nothing must not pass CI (SPEC 10)."""

    matched: int = 0
    selected: int = 0
    runnable: int = 0
    skip_reason: str = ""
    """The first reason the farm gave for skipping a case (a connection it does not speak)."""

    def add(self, other: SelectionCounts) -> None:
        self.matched += other.matched
        self.selected += other.selected
        self.runnable += other.runnable
        self.skip_reason = self.skip_reason or other.skip_reason

    def check(self, source: str, run_pattern: str | None, patterns: tuple[str, ...]) -> None:
        if run_pattern is not None and not self.matched:
            raise InputError(f"--run {run_pattern!r}: no case id matches")
        shown = " ".join(f"-k {p!r}" for p in patterns)
        if not self.selected:
            raise InputError(f"{source}: no case matches {shown}" if shown else f"{source}: no test cases")
        if not self.runnable:
            counted, verb = plural(self.selected, "case"), "is" if self.selected == 1 else "are"
            which = f"the {counted} matching {shown}" if shown else f"all {counted}" if self.selected > 1 else counted
            why = f"; e.g. {self.skip_reason}" if self.skip_reason else ""
            raise InputError(f"{source}: no runnable cases: {which} {verb} skipped (skip: true){why}")


@dataclass
class BatchPlan:
    """What one batch added to the plan."""

    selection: SelectionCounts = field(default_factory=SelectionCounts)
    totals: PlanTotals = field(default_factory=PlanTotals)
    kept: list[Any] = field(default_factory=list)
    """What the sweep's ``CaseKeeper`` keeps of each case planned."""
    ids: list[str] = field(default_factory=list)
    """``--collect-only`` (no keeper): each case id as listed."""
    judges: dict[str | None, Case] = field(default_factory=dict)
    """Each judge the batch's checks ask for, with the first case asking."""
    agents: dict[AgentKey, AgentRef] = field(default_factory=dict)
    """The agents first resolved in this batch."""
    refused: InputError | None = None
    """The batch's first agent, simulator or plan error (raised once the suite's problems are known)."""


@dataclass
class PlanParts:
    """A sweep's plan as its batches are merged, in suite order."""

    cases: CaseKeeper | None
    """Where the planned cases go; None for ``--collect-only``, whose plan keeps ids only."""
    selection: SelectionCounts = field(default_factory=SelectionCounts)
    totals: PlanTotals = field(default_factory=PlanTotals)
    ids: list[str] = field(default_factory=list)
    judges: dict[str | None, Case] = field(default_factory=dict)
    agents: dict[AgentKey, AgentRef] = field(default_factory=dict)
    refused: InputError | None = None

    def add(self, batch: BatchPlan, *, broken: bool) -> None:
        """A batch, after the batches before it: its selection counts always (``--run``, ``-k``
        count every case), its plan unless the suite is ``broken`` (a suite with problems is read
        on only to list them all)."""
        self.selection.add(batch.selection)
        if not broken:
            self.merge(batch)

    def merge(self, batch: BatchPlan) -> None:
        """A planned batch's cases, totals, judges and agents (after the batches before it)."""
        if self.refused is not None:
            return
        self.refused = batch.refused
        for key, ref in batch.agents.items():
            self.agents.setdefault(key, ref)
        for use, case in batch.judges.items():
            self.judges.setdefault(use, case)
        if batch.refused is not None:
            return
        self.totals.merge(batch.totals)
        if self.cases is not None:
            self.cases.add(batch.kept)
        self.ids += batch.ids


@dataclass(frozen=True)
class PlanSpec:
    """What planning takes of ``farm test``'s flags, resolved once (``farm.api.resolve_specs``)."""

    agent_name: str | None = None
    """``-n``: the agent of every case (else each case's own, or the suite's)."""
    runs: int | None = None
    """``--runs``: runs per case (else each case's own, or the default)."""
    min_pass_rate: float = 1.0
    adaptive: AdaptiveRule | None = None
    run_pattern: str | None = None
    """``--run REGEX``: the case ids it matches (Yao's filter)."""
    patterns: tuple[str, ...] = ()
    """``-k``, repeatable."""
    ramp_levels: int = 1
    """``--ramp``: how many concurrency levels each case's runs are made at (``ramp_plan``)."""
    matrix: MatrixPlan | None = None
    """A matrix's arms (SPEC 22): each case is planned once per arm, against the arm's agent."""


ReadCounter = Callable[[int], None]
"""Told, as a suite loads, how many more cases were read (each batch's): a progress display."""


def _listed_id(case: Case, planned: Case) -> str:
    """How ``--collect-only`` lists ``planned`` (``case`` itself, or its copy in a matrix arm)."""
    return planned.id + f"  (skipped: {case.skip_reason or 'skip: true'})" if case.skip else planned.id


class BatchPlanner:
    """Plans batches of one sweep; the same object (a copy of it, in a forked process) plans
    every batch, so each agent is resolved once per process."""

    def __init__(self, spec: PlanSpec, *, keeper: CaseKeeper | None, env: RunEnvironment,
                 options: AgentOptions) -> None:
        self.keeper = keeper
        """The sweep's (a forked process keeps cases with its copy of it: a compact plan's
        dictionary); None: ``--collect-only`` lists ids."""
        self.spec, self.env, self.options = spec, env, options
        self.regex = compile_run_pattern(spec.run_pattern)
        self.agents: dict[AgentKey, AgentRef] = {}
        self._plain: CasePlan | None = None
        """The plan of a case neither skipped nor with a success ratio, once one is planned."""

    def select(self, cases: list[_L]) -> tuple[list[_L], SelectionCounts]:
        counts = SelectionCounts()
        if self.regex is not None:
            cases = [c for c in cases if self.regex.search(c.id)]
        counts.matched = len(cases)
        cases = select_cases(cases, self.spec.patterns)
        counts.selected = len(cases)
        skipped = sum(map(_SKIP, cases))  # in C: a million listed cases are counted at every step
        counts.runnable = len(cases) - skipped
        counts.skip_reason = next((c.skip_reason for c in cases if c.skip and c.skip_reason), "") if skipped else ""
        return cases, counts

    def plan(self, cases: list[Case], *, selected: bool = False) -> BatchPlan:
        """Plan ``cases`` (selected first unless ``selected``); an error is kept, not raised."""
        batch = BatchPlan()
        if not selected:
            cases, batch.selection = self.select(cases)
        try:
            batch.judges = judges_needed(cases)
            check_simulators(cases, self.options)
            plan_one = self._list_case if self._lists_only else self._plan_case
            for case in cases:
                plan_one(case, batch)
        except InputError as exc:
            batch.refused = exc
        return batch

    def plan_listed(self, cases: list[Case | PlainCase]) -> BatchPlan:
        """``plan`` of a listing's batch whose plain cases were never built (``StreamBatch.listed``):
        the same plan, building only a case it names (a judge's first asker). A plain case plans
        as its ``like`` (the same agent, plan and timeout), listed by its own id."""
        if not self._lists_only:
            return self.plan([c if isinstance(c, Case) else c.case() for c in cases])
        batch = BatchPlan()
        cases, batch.selection = self.select(cases)
        try:
            batch.judges = {use: c if isinstance(c, Case) else c.case() for use, c in judges_needed(cases).items()}
            check_simulators([c for c in cases if isinstance(c, Case)], self.options)
            ids, count = batch.ids, 0
            # the like of the plain cases in a row (a batch's all share one: their file's first), its plan and agent
            shared: tuple[Case, CasePlan, AgentRef] | None = None
            for case in cases:
                if not isinstance(case, PlainCase):
                    self._list_case(case, batch)
                    continue
                if shared is None or case.like is not shared[0]:  # planned where the first is: its agent's error too
                    if shared is not None:
                        batch.totals.add_case(*shared, self.env, count)
                    shared, count = (case.like, self._case_plan(case.like), self._agent(case.like, batch)), 0
                ids.append(case.id)
                count += 1
            if shared is not None:
                batch.totals.add_case(*shared, self.env, count)
        except InputError as exc:
            batch.refused = exc
        return batch

    @property
    def _lists_only(self) -> bool:
        """The plan lists ids and counts (``--collect-only``, no matrix, no ramp): ``_list_case``."""
        return self.keeper is None and self.spec.matrix is None and self.spec.ramp_levels <= 1

    def _case_plan(self, case: Case) -> CasePlan:
        if case.skip or case.success_ratio is not None or self._plain is None:
            case_plan = plan_case(case, self.spec.runs, self.spec.min_pass_rate, self.spec.adaptive)
            if not (case.skip or case.success_ratio is not None):
                self._plain = case_plan
            return case_plan
        return self._plain  # every other case's plan depends on the flags only (``plan_case``): planned once

    def _list_case(self, case: Case, batch: BatchPlan) -> None:
        """``_plan_case`` of a listing with no matrix and no ramp (a million listed cases: the same
        steps without asking each time what cannot change)."""
        case_plan = self._case_plan(case)
        batch.totals.add_case(case, case_plan, self._agent(case, batch), self.env)
        batch.ids.append(_listed_id(case, case))

    def _plan_case(self, case: Case, batch: BatchPlan) -> None:
        case_plan = self._case_plan(case)
        if self.spec.ramp_levels > 1 and not case.skip:
            case_plan = ramp_plan(case_plan, self.spec.ramp_levels)
        matrix = self.spec.matrix
        copies: Sequence[tuple[Case, Arm | None]] = arm_copies(case, matrix.arms) if matrix else ((case, None),)
        for planned, arm in copies:  # a matrix plans the case once per arm (SPEC 22)
            agent = self._agent(case, batch) if arm is None else self._arm_agent(case, arm, batch)
            batch.totals.add_case(planned, case_plan, agent, self.env)
            if self.keeper is None:
                batch.ids.append(_listed_id(case, planned))  # --collect-only lists ids: its plan keeps no case
            else:
                batch.kept.append(self.keeper.keep(planned, case_plan, agent))

    def _arm_agent(self, case: Case, arm: Arm, batch: BatchPlan) -> AgentRef:
        key = (case.source or case.base_dir, case.agent, f"{case.connection or ''}{ARM_SEPARATOR}{arm.name}")
        ref = self.agents.get(key)
        if ref is None:
            try:
                ref = resolve_case_agent(case, arm.agent, self.options)
            except AgentResolutionError as exc:
                raise AgentResolutionError(f"arm {arm.name!r}: {exc.message}") from None
            ref = dataclasses.replace(ref, arm=arm.name, connector=arm.connector or "", settings=arm_settings(arm))
            self.agents[key] = batch.agents[key] = ref
        return ref

    def _agent(self, case: Case, batch: BatchPlan) -> AgentRef:
        key = (case.source or case.base_dir, case.agent, case.connection)
        ref = self.agents.get(key)
        if ref is None:
            ref = self.agents[key] = batch.agents[key] = resolve_case_agent(case, self.spec.agent_name, self.options)
        return ref


__all__ = [
    "BatchPlan", "BatchPlanner", "CaseKeeper", "CaseKeeping", "Listable", "PlanParts", "PlanSpec", "ReadCounter",
    "SelectionCounts", "case_keeper", "compile_run_pattern", "exact_pattern", "select_cases",
]
