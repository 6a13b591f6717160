"""What each stage of ``farm test`` takes of its flags: a small frozen spec per stage.

``farm.api.TestSettings`` is every flag as given; no stage below ``farm.api`` and the CLI's
``farm test`` takes it whole. ``resolve_specs`` reads it once, in ``prepare_sweep``, into
these specs, each defined in the room that uses it:

- ``PlanSpec``: batch planning (``farm.plan.batch``);
- ``FleetRequest``: the fleet flags parsed, for fleet keys and control (``farm.fleet.keys``);
- ``OutputSpec``: the reports asked for (``farm.reports.outputs``);
- ``ExecutorOptions``: which executor runs the sweep (``farm.sweep.executor``);
- ``HistoryFacts``: what the history keeps of the flags (``farm.history.facts``);
- ``SweepExtras``: Yao's ``--before``/``--after`` hooks and the listings (``farm.cli.extras``);
- ``AgentOptions``: how agents are resolved (``agent_options``, ``farm.agents.options``);
- ``SourceSpec``: where the cases come from and how they are read (``farm.suites``);
- ``EnvironmentSpec``: what every run sees (``farm.plan.yao_options``: ``--ctx`` is read when planned);
- ``RunShape``: how the plan runs (``farm.plan.sweep_plan``);
- ``SweepEnvelope``: what the report's envelope says of the flags (``farm.models``);
- ``CaseKeeping``: how the plan holds its cases (``farm.plan.batch.case_keeper``), and whether the
  agents are called in this process: both as the executor that runs the sweep chooses.

After ``resolve_specs`` nothing takes ``settings`` again: each step takes the spec it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from farm.agents.options import AgentOptions
from farm.api.settings import TestSettings
from farm.history.facts import HistoryFacts
from farm.matrix.arms import foreign_agent, matrix_plan
from farm.models import SweepEnvelope
from farm.plan.batch import CaseKeeping, PlanSpec
from farm.plan.fleet import FleetRequest
from farm.plan.yao_options import EnvironmentSpec
from farm.reports.outputs import OutputSpec
from farm.run.environment import RunEnvironment
from farm.settings import safe_url
from farm.suites import LoadOptions
from farm.sweep.executor import ExecutorOptions

Listing = Literal["ids", "json"]
"""``--collect-only`` lists the case ids, ``--dry-run`` each case as a JSON line."""


@dataclass(frozen=True)
class SweepExtras:
    """Yao's extras around a sweep: ``--before``/``--after`` (resolved in ``cwd``), or a listing
    instead of the sweep."""

    before: str | None = None
    after: str | None = None
    cwd: str = "."
    listing: Listing | None = None


@dataclass(frozen=True)
class SourceSpec:
    """``-i`` or ``-m`` (resolved in ``cwd``) and how the suite is read (``load.listing`` is
    ``--collect-only``)."""

    input: str | None
    message: str | None
    cwd: Path
    load: LoadOptions


@dataclass(frozen=True)
class RunShape:
    """How the plan runs: ``--parallel``, ``--fail-fast``, semantic figures, ``--ramp``."""

    parallel: int
    semantic: bool
    fail_fast: bool = False
    ramp: list[int] | None = None


@dataclass(frozen=True)
class SweepSpecs:
    """What each stage of ``farm test`` takes of its flags (see the module docstring)."""

    plan: PlanSpec
    fleet: FleetRequest
    outputs: OutputSpec
    executor: ExecutorOptions
    history: HistoryFacts
    extras: SweepExtras
    agents: AgentOptions
    source: SourceSpec
    environment: EnvironmentSpec
    shape: RunShape
    envelope: SweepEnvelope
    """The envelope's flags; what reading the suite and planning the fleet found is added to it."""
    cases: CaseKeeping = "models"
    """How the plan holds its cases (``farm.plan.batch.case_keeper``)."""
    agents_here: bool = True
    """An in-process sweep calls its agents here; a distributed or listing one only checks them."""
    verbose: bool = False
    """``-v``: each distinct failure once after the sweep (and a reporter agent's details)."""


def resolve_specs(settings: TestSettings) -> SweepSpecs:
    """What each stage takes of ``settings`` (this module), read once."""
    agents = agent_options(settings)
    fleet = settings.fleet.parsed()
    given: dict[str, Any] = {"yao_compat": settings.yao_compat or None,  # the envelope's: set only when given
                             "min_overall_pass_rate": settings.min_overall_pass_rate}
    plan = PlanSpec(agent_name=settings.name, runs=settings.runs, min_pass_rate=settings.min_pass_rate,
                    adaptive=fleet.adaptive, run_pattern=settings.run_pattern,
                    patterns=settings.patterns, ramp_levels=len(settings.ramp or (1,)),
                    matrix=matrix_plan(settings.matrix, settings.cwd, settings.name))
    return SweepSpecs(
        plan=plan, fleet=fleet,
        outputs=OutputSpec(outputs=settings.outputs, reporter=settings.reporter, verbose=settings.verbose),
        executor=ExecutorOptions(broker=settings.broker, queue=settings.queue, detach=settings.detach),
        history=HistoryFacts(  # name: -n http://user:PASSWORD@host/ is kept without its secret
            runs=settings.runs, min_pass_rate=settings.min_pass_rate, parallel=settings.parallel, user=settings.user,
            timeout_s=settings.timeout_s, fail_fast=settings.fail_fast, confirm_failures=settings.confirm_failures,
            name=safe_url(settings.name) if settings.name else None, connector=settings.connector, team=settings.team,
            judge=settings.judge, queue=settings.queue, neuro_san_compat=settings.neuro_san_compat,
            detach=settings.detach, distributed=bool(settings.broker), cwd=Path(settings.cwd)),
        extras=SweepExtras(before=settings.before, after=settings.after, cwd=settings.cwd,
                           listing="json" if settings.dry_run else "ids" if settings.collect_only else None),
        agents=agents,
        source=SourceSpec(settings.input, settings.message, Path(settings.cwd), LoadOptions(
            yao_compat=settings.yao_compat, simulator=settings.simulator, listing=settings.collect_only,
            allow_remote_includes=settings.allow_remote_includes,
            # -n (or every arm) naming no neuro-san server: a neuro-san case's connections do not apply (it runs once)
            foreign_agent=foreign_agent(settings.name, plan.matrix, agents))),
        environment=EnvironmentSpec(RunEnvironment(
            user=settings.user, team=settings.team, connector=settings.connector, timeout_s=settings.timeout_s,
            neuro_san_compat=settings.neuro_san_compat, yao_compat=settings.yao_compat,
            confirm_failures=settings.confirm_failures), ctx=settings.ctx, cwd=settings.cwd),
        shape=RunShape(parallel=settings.parallel, semantic=settings.semantic_figures(), fail_fast=settings.fail_fast,
                       ramp=list(settings.ramp) if settings.ramp else None),
        envelope=SweepEnvelope(min_pass_rate=settings.min_pass_rate, runs=settings.runs, reporter=settings.reporter,
                               **{k: v for k, v in given.items() if v is not None}),
        cases="ids" if settings.collect_only else "stored" if settings.broker and not settings.dry_run else "models",
        agents_here=not (settings.broker or settings.dry_run or settings.collect_only),
        verbose=settings.verbose,
    )


def agent_options(settings: TestSettings) -> AgentOptions:
    """How the sweep's agents (and a ``-r`` reporter agent) are resolved: read once per prepare."""
    return AgentOptions.from_env(Path(settings.cwd), connector=settings.connector, judge=settings.judge,
                                 neuro_san_server=settings.server, isolate=settings.isolate)


__all__ = ["Listing", "RunShape", "SourceSpec", "SweepExtras", "SweepSpecs", "agent_options",
           "resolve_specs"]
