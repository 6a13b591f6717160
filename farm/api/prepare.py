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
import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
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
from farm.api.specs import SweepSpecs, agent_options, resolve_specs
from farm.defaults import MAX_SWEEP_RUNS
from farm.errors import AgentResolutionError, SettingsError
from farm.fleet.keys import plan_fleet
from farm.matrix.arms import foreign_agent
from farm.models import Case, FleetFacts, MatrixPlan, SweepEnvelope
from farm.plan.batch import BatchPlanner, CaseKeeper, PlanParts, ReadCounter
from farm.plan.load_processes import SUBMIT_READERS, load_processes, plan_in_processes
from farm.plan.sweep_plan import PlannedCases, SweepPlan, build_plan, new_sweep_id
from farm.plan.yao_options import load_context_file
from farm.reports import BUILTIN_REPORTERS
from farm.reports.outputs import OutputTarget, keeps_run_details, plan_outputs
from farm.run.execute import RunEnvironment
from farm.stats import DEFAULT_MAX_RUN_DETAILS
from farm.suites import CaseStream, LoadOptions, open_input, open_message


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


def _open(settings: TestSettings, matrix: MatrixPlan | None, agents: AgentOptions) -> CaseStream:
    if (settings.input is None) == (settings.message is None):
        raise SettingsError("give either -i PATH (a suite file or directory) or -m MESSAGE")
    if settings.message is not None:
        return open_message(settings.message, cwd=Path(settings.cwd))
    # -n (or every arm) naming no neuro-san server: a neuro-san case's connections do not apply (it runs once)
    foreign = foreign_agent(settings.name, matrix, agents)
    options = LoadOptions(yao_compat=settings.yao_compat, simulator=settings.simulator, foreign_agent=foreign,
                          allow_remote_includes=settings.allow_remote_includes, listing=settings.collect_only)
    return open_input(str(settings.input), cwd=Path(settings.cwd), options=options)


def prepare_sweep(settings: TestSettings, *, sweep_id: str | None = None, read: ReadCounter | None = None
                  ) -> PreparedSweep:
    """Load, validate, resolve, check the outputs and plan; raises InputError (exit 2) before
    anything runs. ``read`` is told the cases read as each batch is planned (a million cases
    take tens of seconds: the command shows it)."""
    settings.check()
    with collector.paused():  # half the load time at 100k cases was collections (farm.collector)
        return _prepare(settings, sweep_id, read or (lambda cases: None))


PLAN_BATCH = 2_000
"""Cases read, checked and planned together: a suite streams through in batches of this many
(lines of a file, where several processes read it). Planning walks a batch's cases several times
(selection, judges, simulators, plans, ids): 2,000 stay in the CPU's cache between the walks,
10,000 did not (a million cases listed: 0.86x the CPU)."""


def _prepare(settings: TestSettings, sweep_id: str | None, read: ReadCounter) -> PreparedSweep:
    """Read the suite once, in batches: select, resolve and plan each batch as it is read, so a
    distributed submitter holds each planned case only in its stored form (``CompactCases``), and
    a large suite is read by a process per core (``farm.plan.load_processes``). Problems are raised in
    the order a user fixes them: the suite's (all of them), the selection, the outputs, then the
    agents, judges and simulators."""
    specs = resolve_specs(settings)
    options = agent_options(settings)
    stream = _open(settings, specs.plan.matrix, options)
    sid = sweep_id or new_sweep_id()
    env = _environment(settings, sid)
    parts = PlanParts(None if settings.collect_only else _case_keeper(specs, env))
    planner = BatchPlanner(specs.plan, keeper=parts.cases, env=env, options=options)
    _read_and_plan(stream, planner, parts, read)
    stream.check()
    if parts.totals.runs > MAX_SWEEP_RUNS:
        raise SettingsError(f"the sweep plans {parts.totals.runs:,} runs ({parts.totals.cases:,} cases): at most "
                            f"{MAX_SWEEP_RUNS:,} in one sweep; lower --runs or split the suite")
    stream.notes += manifest_overrides(parts.agents, settings.name or ("arms" if specs.plan.matrix else None))
    parts.selection.check(settings.input or "-m", planner.regex and planner.regex.pattern, planner.spec.patterns)
    outputs = plan_outputs(specs.outputs, root=stream.root, inputs=stream.files, cwd=Path(settings.cwd))
    if parts.refused is not None:
        raise parts.refused
    built = _check_adapters(specs, parts, options)
    fleet = plan_fleet(specs.fleet, built.agents, built.judges, parts.judges, options)
    plan = build_plan(
        sid, parts.cases if parts.cases is not None else PlannedCases(), env=env, options=options,
        totals=parts.totals, parallel=settings.parallel, semantic=settings.semantic_figures(), matrix=specs.plan.matrix,
        fail_fast=settings.fail_fast, envelope=_envelope(settings, stream, fleet.describe()), queue=settings.queue,
        fleet=fleet, max_run_details=DEFAULT_MAX_RUN_DETAILS if keeps_run_details(outputs) else 0,
        ramp=list(settings.ramp) if settings.ramp else None)
    return PreparedSweep(plan, stream, outputs, specs, options, listed=parts.ids if parts.cases is None else None,
                         adapters=built if _calls_agents_here(specs) else None)


def _environment(settings: TestSettings, sweep_id: str) -> RunEnvironment:
    """What every run of the sweep sees: who runs it, the connector, timeouts, Yao's context file."""
    ctx = load_context_file(settings.ctx, settings.cwd) if settings.ctx else {}
    return RunEnvironment(
        user=settings.user, team=settings.team, connector=settings.connector, timeout_s=settings.timeout_s,
        neuro_san_compat=settings.neuro_san_compat, sweep_id=sweep_id, yao_compat=settings.yao_compat,
        confirm_failures=settings.confirm_failures, **ctx)


def _read_and_plan(stream: CaseStream, planner: BatchPlanner, parts: PlanParts, read: ReadCounter) -> None:
    """Read the suite batch by batch, selecting and planning each batch into ``parts`` (in a
    process per core when the plan keeps no ``Case`` objects and the suite is large)."""
    travels = parts.cases is None or parts.cases.travels
    processes = load_processes(stream, most=None if parts.cases is None else SUBMIT_READERS) if travels else 1
    if processes > 1:
        plan_in_processes(stream, planner, parts, PLAN_BATCH, processes, read)
        return
    reading = iter(stream)
    while batch := list(itertools.islice(reading, PLAN_BATCH)):
        read(len(batch))
        cases, counts = planner.select(batch)
        parts.selection.add(counts)
        if not stream.broken:  # a suite with problems is read on only to list them all
            parts.merge(planner.plan(cases, selected=True))


def _check_adapters(specs: SweepSpecs, parts: PlanParts, options: AgentOptions) -> BuiltAdapters:
    """Build the sweep's agents and judges and find its reporter: bad ones are exit 2 now."""
    replaying = AgentHooks(replaying=specs.fleet.replay is not None)  # a replay needs no secret
    with _client_here_or_deferred(specs), replaying.building():
        built = _check_agents_and_judges(parts.judges, parts.agents.values(), options,
                                         replaying=replaying.replaying)
    reporter = specs.outputs.reporter
    if reporter and reporter not in BUILTIN_REPORTERS:
        parse_reference(reporter, options)  # a missing reporter is bad input, found now
    return built


def _client_here_or_deferred(specs: SweepSpecs) -> contextlib.AbstractContextManager[None]:
    """Nothing when the agents are called here, else ``client_deferred``: the transport module is
    imported only by a sweep that builds HTTP agents it will not call (a plain sweep never does)."""
    if _calls_agents_here(specs):
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


def _envelope(settings: TestSettings, loaded: CaseStream, fleet: FleetFacts | None) -> SweepEnvelope:
    """What the report's envelope says of the flags (the optional parts only when given)."""
    given: dict[str, Any] = {
        "yao_compat": True if settings.yao_compat else None, "notes": loaded.notes or None,
        "min_overall_pass_rate": settings.min_overall_pass_rate, "fleet": fleet,
    }
    return SweepEnvelope(
        input=(settings.message or settings.input) if loaded.kind == "message" else str(loaded.root),
        min_pass_rate=settings.min_pass_rate, runs=settings.runs, reporter=settings.reporter,
        **{k: v for k, v in given.items() if v is not None},
    )


__all__ = ["PLAN_BATCH", "PreparedSweep", "prepare_sweep"]
