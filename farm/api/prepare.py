"""``prepare_sweep``: settings → a loaded, resolved, planned sweep whose outputs are checked.

Everything here raises ``FarmError`` and never prints or exits (``farm.cli`` does that). The
order matters: load and validate every suite, resolve every agent and check every output path
*before* the first run, so that bad input exits 2 with nothing run. The agents and judges built
to be checked are the ones an in-process sweep runs (``PreparedSweep.adapters``).

The suite is read once, in batches of ``PLAN_BATCH`` cases, each selected, resolved and planned
as it is read into the plan's ``CaseKeeper``, which the executor chooses: a distributed submitter
keeps only each case's stored form (``farm.plan.batch.case_keeper``), so a million-case
plan is never a million ``Case`` objects.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import farm.collector as collector
from farm.agents.built import BuiltAdapters
from farm.agents.notes import manifest_overrides
from farm.agents.options import AgentOptions
from farm.agents.resolve import parse_reference
from farm.api.settings import TestSettings
from farm.api.specs import SourceSpec, SweepSpecs, resolve_specs
from farm.defaults import MAX_SWEEP_RUNS
from farm.errors import SettingsError
from farm.fleet.keys import plan_fleet
from farm.plan.batch import BatchPlanner, PlanParts, ReadCounter, case_keeper
from farm.plan.load_processes import read_and_plan
from farm.plan.sweep_plan import PlannedCases, SweepPlan, build_plan, new_sweep_id
from farm.reports import BUILTIN_REPORTERS
from farm.reports.outputs import OutputTarget, keeps_run_details, plan_outputs
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


def _open(source: SourceSpec) -> CaseStream:
    if (source.input is None) == (source.message is None):
        raise SettingsError("give either -i PATH (a suite file or directory) or -m MESSAGE")
    if source.message is not None:
        return open_message(source.message, cwd=source.cwd)
    return open_input(str(source.input), cwd=source.cwd, options=source.load)


def prepare_sweep(settings: TestSettings, *, sweep_id: str | None = None, read: ReadCounter | None = None
                  ) -> PreparedSweep:
    """Load, validate, resolve, check the outputs and plan; raises InputError (exit 2) before
    anything runs. ``read`` is told the cases read as each batch is planned (a million cases
    take tens of seconds: the command shows it)."""
    settings.check()
    specs = resolve_specs(settings)
    with collector.paused():  # half the load time at 100k cases was collections (farm.collector)
        return _prepare(specs, sweep_id, read or (lambda cases: None))


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
    stream = _open(source)
    sid = sweep_id or new_sweep_id()
    env = specs.environment.for_sweep(sid)
    parts = PlanParts(case_keeper(specs.cases, env))
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
    built = BuiltAdapters.checked(parts.agents.values(), parts.judges, options,
                                  replaying=specs.fleet.replay is not None, here=specs.agents_here)
    reporter = specs.outputs.reporter
    if reporter and reporter not in BUILTIN_REPORTERS:
        parse_reference(reporter, options)  # a missing reporter is bad input, found now
    fleet = plan_fleet(specs.fleet, built.agents, built.specs, built.judges, parts.judges, options)
    found = {"input": (source.message or source.input) if stream.kind == "message" else str(stream.root),
             "notes": stream.notes or None, "fleet": fleet.describe()}  # the envelope's: set only when found
    shape = specs.shape
    plan = build_plan(
        sid, parts.cases if parts.cases is not None else PlannedCases(), env=env, options=options,
        totals=parts.totals, parallel=shape.parallel, semantic=shape.semantic, matrix=specs.plan.matrix,
        fail_fast=shape.fail_fast, envelope=specs.envelope.updated(**{k: v for k, v in found.items() if v is not None}),
        queue=specs.executor.queue, fleet=fleet, max_run_details=run_details, ramp=shape.ramp)
    return PreparedSweep(plan, stream, outputs, specs, options, listed=parts.ids if parts.cases is None else None,
                         adapters=built if specs.agents_here else None)


__all__ = ["PLAN_BATCH", "PreparedSweep", "prepare_sweep"]
