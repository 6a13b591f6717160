"""``prepare_sweep``: settings → a loaded, resolved, planned sweep whose outputs are checked.

Everything here raises ``FarmError`` and never prints or exits (``farm.cli`` does that). The
order matters: load and validate every suite, resolve every agent and check every output path
*before* the first run, so that bad input exits 2 with nothing run. The agents and judges built
to be checked are the ones an in-process sweep runs (``PreparedSweep.adapters``).

The suite is read once, in batches of ``PLAN_BATCH`` cases, each selected, resolved and planned
as it is read into the plan's ``CaseKeeper``, which the executor chooses: a distributed submitter
keeps only each case's stored form (``farm.distributed.submit.stored_cases``), so a million-case
plan is never a million ``Case`` objects.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import farm.collector as collector
from farm.agents.built import BuiltAdapters
from farm.agents.hooks import AgentHooks
from farm.agents.notes import manifest_overrides
from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.agents.resolve import parse_reference
from farm.agents.retry import attempts_from_env
from farm.api.settings import TestSettings
from farm.api.specs import SourceSpec, SweepSpecs, resolve_specs
from farm.defaults import MAX_SWEEP_RUNS
from farm.errors import AgentResolutionError, SettingsError
from farm.fleet.keys import plan_fleet
from farm.matrix.arms import foreign_agent
from farm.models import Case, FleetFacts, MatrixPlan, SweepEnvelope
from farm.plan.batch import BatchPlanner, CaseKeeper, PlanParts, ReadCounter
from farm.plan.load_processes import read_and_plan
from farm.plan.sweep_plan import PlannedCases, SweepPlan, build_plan, new_sweep_id
from farm.reports import BUILTIN_REPORTERS
from farm.reports.outputs import OutputTarget, keeps_run_details, plan_outputs
from farm.run.environment import RunEnvironment
from farm.stats import DEFAULT_MAX_RUN_DETAILS
from farm.suites import CaseStream, open_input, open_message


@dataclass
class PreparedSweep:
    """A sweep that passed every input check and is ready to hand to an executor."""

    plan: SweepPlan
    loaded: CaseStream
    """Where the cases came from (kind, root, files) and the notes made reading them."""
    outputs: list[OutputTarget]
    """Every requested output, checked writable."""
    specs: SweepSpecs
    """What each stage takes of the flags, resolved once (``resolve_specs``)."""
    options: AgentOptions
    """How agents are resolved (``agent_options``): the sweep's, and a ``-r`` reporter agent's."""
    listed: list[str] | None = None
    """``--collect-only``: every case id as listed, a skipped one marked (the plan then holds no case)."""
    adapters: BuiltAdapters | None = None
    """An in-process sweep's agents and judges, built once as checked: its executor runs these."""

    def with_plan(self, plan: SweepPlan) -> PreparedSweep:  # what a pre-run contributor made of the (frozen) plan
        return dataclasses.replace(self, plan=plan)


def _check_agents_and_judges(needed: dict[str | None, Case], refs: Iterable[AgentRef], options: AgentOptions,
                             *, replaying: bool) -> BuiltAdapters:
    """Build every adapter and judge once, so a bad manifest, connector or key exits 2 now (an
    in-process sweep then runs these)."""
    built = BuiltAdapters.build(refs, options, replaying=replaying)
    for use, case in needed.items():
        try:
            built.judges(use)
        except AgentResolutionError as exc:
            where = f"{case.source}:{case.line}" if case.line else case.source or case.id
            raise AgentResolutionError(f"{where}: judge {use or '(default)'}: {exc.message}") from None
    attempts_from_env(4)  # a bad FARM_RETRY_ATTEMPTS is a settings error, not a failure in every run
    return built


def _open(source: SourceSpec, name: str | None, matrix: MatrixPlan | None, agents: AgentOptions) -> CaseStream:
    if (source.input is None) == (source.message is None):
        raise SettingsError("give either -i PATH (a suite file or directory) or -m MESSAGE")
    if source.message is not None:
        return open_message(source.message, cwd=source.cwd)
    # -n (or every arm) naming no neuro-san server: a neuro-san case's connections do not apply (it runs once)
    options = dataclasses.replace(source.load, foreign_agent=foreign_agent(name, matrix, agents))
    return open_input(str(source.input), cwd=source.cwd, options=options)


def prepare_sweep(settings: TestSettings, *, sweep_id: str | None = None, read: ReadCounter | None = None
                  ) -> PreparedSweep:
    """Load, validate, resolve, check the outputs and plan; raises InputError (exit 2) before
    anything runs. ``read`` is told the cases read as each batch is planned (a million cases
    take tens of seconds: the command shows it)."""
    settings.check()
    with collector.paused():  # half the load time at 100k cases was collections (farm.collector)
        return _prepare(resolve_specs(settings), sweep_id, read or (lambda cases: None))


PLAN_BATCH = 2_000
"""Cases read, checked and planned together: a suite streams through in batches of this many
(lines of a file, where several processes read it). Planning walks a batch's cases several times
(selection, judges, simulators, plans, ids): 2,000 stay in the CPU's cache between the walks,
10,000 did not (a million cases listed: 0.86x the CPU)."""


def _prepare(specs: SweepSpecs, sweep_id: str | None, read: ReadCounter) -> PreparedSweep:
    """Read the suite once, in batches: select, resolve and plan each batch as it is read, so a
    distributed submitter holds each planned case only in its stored form (``CompactCases``), and
    a large suite is read by a process per core (``farm.plan.load_processes``). Problems are raised in
    the order a user fixes them: the suite's (all of them), the selection, the outputs, then the
    agents, judges and simulators."""
    options = specs.agents
    source = specs.source
    stream = _open(source, specs.plan.agent_name, specs.plan.matrix, options)
    sid = sweep_id or new_sweep_id()
    env = specs.environment.for_sweep(sid)
    parts = PlanParts(None if source.load.listing else _case_keeper(specs, env))
    planner = BatchPlanner(specs.plan, keeper=parts.cases, env=env, options=options)
    read_and_plan(stream, planner, parts, PLAN_BATCH, read)
    stream.check()
    if parts.totals.runs > MAX_SWEEP_RUNS:
        raise SettingsError(f"the sweep plans {parts.totals.runs:,} runs ({parts.totals.cases:,} cases): at most "
                            f"{MAX_SWEEP_RUNS:,} in one sweep; lower --runs or split the suite")
    stream.notes += manifest_overrides(parts.agents, specs.plan.agent_name or ("arms" if specs.plan.matrix else None))
    parts.selection.check(source.input or "-m", planner.regex and planner.regex.pattern, planner.spec.patterns)
    outputs = plan_outputs(specs.outputs, root=stream.root, inputs=stream.files, cwd=source.cwd)
    run_details = DEFAULT_MAX_RUN_DETAILS if keeps_run_details(outputs) else 0
    if parts.refused is not None:
        raise parts.refused
    here = _calls_agents_here(specs)
    built = _check_adapters(specs, parts, options, here=here)
    fleet = plan_fleet(specs.fleet, built.agents, built.judges, parts.judges, options)
    shape = specs.shape
    plan = build_plan(
        sid, parts.cases if parts.cases is not None else PlannedCases(), env=env, options=options,
        totals=parts.totals, parallel=shape.parallel, semantic=shape.semantic, matrix=specs.plan.matrix,
        fail_fast=shape.fail_fast, envelope=_envelope(specs, stream, fleet.describe()), queue=specs.executor.queue,
        fleet=fleet, max_run_details=run_details, ramp=shape.ramp)
    return PreparedSweep(plan, stream, outputs, specs, options, listed=parts.ids if parts.cases is None else None,
                         adapters=built if here else None)


def _check_adapters(specs: SweepSpecs, parts: PlanParts, options: AgentOptions, *, here: bool) -> BuiltAdapters:
    """Build the sweep's agents and judges and find its reporter: bad ones are exit 2 now."""
    replaying = AgentHooks(replaying=specs.fleet.replay is not None)  # a replay needs no secret
    with _client_here_or_deferred(here), replaying.building():
        built = _check_agents_and_judges(parts.judges, parts.agents.values(), options,
                                         replaying=replaying.replaying)
    reporter = specs.outputs.reporter
    if reporter and reporter not in BUILTIN_REPORTERS:
        parse_reference(reporter, options)  # a missing reporter is bad input, found now
    return built


def _client_here_or_deferred(here: bool) -> contextlib.AbstractContextManager[None]:
    """Nothing when the agents are called here, else ``client_deferred``: the transport module is
    imported only by a sweep that builds HTTP agents it will not call (a plain sweep never does)."""
    if here:
        return contextlib.nullcontext()
    from farm.agents.transport import client_deferred

    return client_deferred()


def _calls_agents_here(specs: SweepSpecs) -> bool:
    """An in-process sweep calls its agents in this process; a distributed or listing one only
    checks them, so their HTTP client is not loaded here (``client_deferred``)."""
    return not (specs.executor.broker or specs.extras.listing)


def _case_keeper(specs: SweepSpecs, env: RunEnvironment) -> CaseKeeper:
    """How the plan holds its cases, as the executor that runs it chooses: a distributed
    submitter keeps them in their stored form; an in-process sweep runs them, and listing them
    (``--dry-run``) needs no store."""
    if specs.executor.broker and not specs.extras.listing:
        from farm.distributed.submit import stored_cases

        return stored_cases(env)
    return PlannedCases()


def _envelope(specs: SweepSpecs, loaded: CaseStream, fleet: FleetFacts | None) -> SweepEnvelope:
    """What the report's envelope says of the flags (the optional parts only when given)."""
    given: dict[str, Any] = {
        "yao_compat": True if specs.shape.yao_compat else None, "notes": loaded.notes or None,
        "min_overall_pass_rate": specs.shape.min_overall_pass_rate, "fleet": fleet,
    }
    source = specs.source
    return SweepEnvelope(
        input=(source.message or source.input) if loaded.kind == "message" else str(loaded.root),
        min_pass_rate=specs.plan.min_pass_rate, runs=specs.plan.runs, reporter=specs.outputs.reporter,
        **{k: v for k, v in given.items() if v is not None},
    )


__all__ = ["PLAN_BATCH", "PreparedSweep", "prepare_sweep"]
