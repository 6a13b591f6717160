"""``farm test`` as a library: settings → loaded, resolved, planned sweep → outputs.

Everything here raises ``FarmError`` and never prints or exits (``farm.cli`` does that). The
order matters: load and validate every suite, resolve every agent and check every output path
*before* the first run, so that bad input exits 2 with nothing run. The agents and judges built
to be checked are the ones an in-process sweep runs (``PreparedSweep.adapters``). The flags are
resolved once into what each stage takes (``resolve_specs``, into ``farm.sweep.specs``: a spec for
batch planning, fleet control, the outputs, the executor, the history's facts and Yao's extras,
carried by ``PreparedSweep.specs``): no stage below ``farm.api`` takes ``TestSettings`` whole, and
the CLI, having built it, goes on with the specs.

The suite is read once, in batches of ``PLAN_BATCH`` cases, each selected, resolved and planned
as it is read into the plan's ``CaseKeeper``, which the executor chooses: a distributed submitter
keeps only each case's stored form (``farm.distributed.submit.stored_cases``), so a million-case
plan is never a million ``Case`` objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from farm import collector
from farm.agents.built import BuiltAdapters
from farm.agents.hooks import AgentHooks
from farm.agents.notes import manifest_overrides
from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.agents.resolve import parse_reference
from farm.agents.retry import attempts_from_env
from farm.defaults import DEFAULT_PARALLEL, MAX_RUNS_PER_CASE, MAX_SWEEP_RUNS
from farm.errors import AgentResolutionError, FarmRuntimeError, SettingsError
from farm.fleet.keys import plan_fleet
from farm.history.facts import HistoryFacts
from farm.matrix.arms import MatrixFlags, foreign_agent, matrix_plan
from farm.models import Case, FleetFacts, MatrixPlan, SweepEnvelope, SweepReport
from farm.plan.batch import BatchPlanner, CaseKeeper, PlanParts, PlanSpec, ReadCounter
from farm.plan.fleet import FleetFlags
from farm.plan.load_processes import SUBMIT_READERS, load_processes, plan_in_processes
from farm.plan.sweep_plan import PlannedCases, SweepPlan, build_plan, new_sweep_id
from farm.plan.yao_options import load_context_file
from farm.reports import BUILTIN_REPORTERS
from farm.reports.outputs import OutputSpec, OutputTarget, keeps_run_details, plan_outputs
from farm.run.execute import RunEnvironment
from farm.settings import FarmSettings, safe_url, semantic_cache_entries, semantic_enabled
from farm.stats import DEFAULT_MAX_RUN_DETAILS, check_ramp
from farm.suites import CaseStream, LoadOptions, open_input, open_message
from farm.sweep.executor import Executor, ExecutorOptions
from farm.sweep.lifecycle import SweepStop
from farm.sweep.local import LocalExecutor
from farm.sweep.observers import Observers, SweepObserver
from farm.sweep.specs import SweepExtras, SweepSpecs


@dataclass(frozen=True)
class TestSettings:
    """Every flag of ``farm test`` (SPEC 3, 10), already parsed."""

    __test__ = False  # not a pytest class

    input: str | None = None
    """``-i``: a suite file, a directory of suites, or a message that cannot be a path."""
    message: str | None = None
    """``-m``: send this text to the agent (direct message mode)."""
    outputs: tuple[str, ...] = ()
    """``-o``, repeatable: each format rendered from the same sweep."""
    name: str | None = None
    connector: str | None = None
    user: str | None = None
    team: str | None = None
    reporter: str | None = None
    runs: int | None = None
    timeout_s: float | None = None
    parallel: int = DEFAULT_PARALLEL
    verbose: bool = False
    fail_fast: bool = False
    isolate: bool = False
    """``--isolate``: sync python agents run in a pool of subprocesses (AgentOptions.isolate)."""
    broker: str | None = None
    queue: str = "farm"
    detach: bool = False
    min_pass_rate: float = 1.0
    min_overall_pass_rate: float | None = None
    """Suite-level gate (0–1, run-weighted), on top of the per-case verdicts."""
    judge: str | None = None
    server: str | None = None
    patterns: tuple[str, ...] = ()
    """``-k``, repeatable: a case runs when its id contains any of them (a glob when it has ``*?[``)."""
    neuro_san_compat: bool = False
    confirm_failures: int = 1
    run_pattern: str | None = None
    """``--run REGEX`` (Yao's case filter)."""
    ctx: str | None = None
    """``--ctx FILE``: Yao's context file for every call."""
    collect_only: bool = False
    """``--collect-only``: validate and list the case ids; call no agent."""
    dry_run: bool = False
    """``--dry-run``: as ``collect_only``, listing each case as a JSON line."""
    simulator: str | None = None
    """``--simulator REF``: the simulator of every dynamic case."""
    before: str | None = None
    after: str | None = None
    yao_compat: bool = False
    allow_remote_includes: bool = False
    """``--allow-remote-includes``: HOCON includes of URLs are fetched (refused otherwise)."""
    fleet: FleetFlags = field(default_factory=FleetFlags)
    """Rate limits, budget, adaptive runs, judge cache, record/replay (SPEC 13)."""
    matrix: MatrixFlags = field(default_factory=MatrixFlags)
    """``--arm``, ``--matrix``, ``--baseline-arm``, ``--seed`` (SPEC 22)."""
    semantic: bool | None = None
    """False: no semantic figures (``--no-semantic``); None: ``FARM_SEMANTIC`` decides (default on)."""
    ramp: tuple[int, ...] | None = None  # --ramp 2,4,8,16: each case's runs at each concurrency (farm.stats.ramp)
    cwd: str = field(default_factory=lambda: str(Path.cwd()))


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


def agent_options(settings: TestSettings) -> AgentOptions:
    options = AgentOptions.from_env(
        Path(settings.cwd), connector=settings.connector, judge=settings.judge, neuro_san_server=settings.server
    )
    return dataclasses.replace(options, isolate=True) if settings.isolate else options


def _open(settings: TestSettings, matrix: MatrixPlan | None = None) -> CaseStream:
    if (settings.input is None) == (settings.message is None):
        raise SettingsError("give either -i PATH (a suite file or directory) or -m MESSAGE")
    if settings.message is not None:
        return open_message(settings.message, cwd=Path(settings.cwd))
    # -n (or every arm) naming no neuro-san server: a neuro-san case's connections do not apply (it runs once)
    foreign = foreign_agent(settings.name, matrix, agent_options(settings))
    options = LoadOptions(yao_compat=settings.yao_compat, simulator=settings.simulator, foreign_agent=foreign,
                          allow_remote_includes=settings.allow_remote_includes, listing=settings.collect_only)
    return open_input(str(settings.input), cwd=Path(settings.cwd), options=options)


def prepare_sweep(settings: TestSettings, *, sweep_id: str | None = None, read: ReadCounter | None = None
                  ) -> PreparedSweep:
    """Load, validate, resolve, check the outputs and plan; raises InputError (exit 2) before
    anything runs. ``read`` is told the cases read as each batch is planned (a million cases
    take tens of seconds: the command shows it)."""
    _check_numbers(settings)
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
    stream = _open(settings, specs.plan.matrix)
    options = agent_options(settings)
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
        totals=parts.totals, parallel=settings.parallel, semantic=_semantic(settings), matrix=specs.plan.matrix,
        fail_fast=settings.fail_fast, envelope=_envelope(settings, stream, fleet.describe()), queue=settings.queue,
        fleet=fleet, max_run_details=DEFAULT_MAX_RUN_DETAILS if keeps_run_details(outputs) else 0,
        ramp=list(settings.ramp) if settings.ramp else None)
    return PreparedSweep(plan, stream, outputs, specs, options, listed=parts.ids if parts.cases is None else None,
                         adapters=built if _calls_agents_here(specs) else None)


def resolve_specs(settings: TestSettings) -> SweepSpecs:
    """What each stage takes of ``settings`` (``farm.sweep.specs``), read once."""
    return SweepSpecs(
        plan=PlanSpec(agent_name=settings.name, runs=settings.runs, min_pass_rate=settings.min_pass_rate,
                      adaptive=settings.fleet.adaptive_rule(), run_pattern=settings.run_pattern,
                      patterns=settings.patterns, ramp_levels=len(settings.ramp or (1,)),
                      matrix=matrix_plan(settings.matrix, settings.cwd, settings.name)),
        fleet=settings.fleet,
        outputs=OutputSpec(outputs=settings.outputs, reporter=settings.reporter, verbose=settings.verbose),
        executor=ExecutorOptions(broker=settings.broker, queue=settings.queue, detach=settings.detach),
        history=HistoryFacts(
            runs=settings.runs, min_pass_rate=settings.min_pass_rate, parallel=settings.parallel,
            timeout_s=settings.timeout_s, fail_fast=settings.fail_fast, confirm_failures=settings.confirm_failures,
            name=safe_url(settings.name) if settings.name else None,  # -n http://user:PASSWORD@host/
            connector=settings.connector, judge=settings.judge, queue=settings.queue,
            neuro_san_compat=settings.neuro_san_compat, user=settings.user, team=settings.team,
            detach=settings.detach, distributed=bool(settings.broker), cwd=Path(settings.cwd)),
        extras=SweepExtras(before=settings.before, after=settings.after, cwd=settings.cwd,
                           listing="json" if settings.dry_run else "ids" if settings.collect_only else None),
        verbose=settings.verbose,
    )


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


def create_executor(options: ExecutorOptions, farm_settings: FarmSettings | None = None,
                    adapters: BuiltAdapters | None = None) -> Executor:
    """In-process unless a broker is given; Celery is imported only for a distributed sweep.
    ``adapters``: the prepared sweep's (``PreparedSweep.adapters``), which an in-process sweep runs
    instead of building them again."""
    farm_settings = farm_settings or FarmSettings.from_env()
    if options.broker:
        from farm.distributed.submit import CeleryExecutor

        executor: Executor = CeleryExecutor(farm_settings.replace(broker_url=options.broker, queue=options.queue),
                                            detach=options.detach)
        return executor
    return LocalExecutor(grace_s=farm_settings.stop_grace_s, adapters=adapters)


def run_sweep(settings: TestSettings, observer: SweepObserver | None = None, stop: SweepStop | None = None
              ) -> SweepReport:
    """``farm test`` from Python: validate, run (in-process or distributed), return the report.

    Writes no file (``farm.write_report`` does); pass an observer (e.g.
    ``farm.sweep.observers.JsonlObserver``) to follow the runs, a ``SweepStop`` to stop it early.
    Inside a running event loop (Jupyter, pytest-asyncio, FastAPI) use ``arun_sweep``.
    """
    if _loop_running():  # before anything is built: no coroutine left un-awaited
        raise FarmRuntimeError("run_sweep() cannot run inside a running event loop (Jupyter, pytest-asyncio, "
                               "FastAPI): use `await farm.arun_sweep(settings)`")
    prepared = prepare_sweep(settings)
    executor = create_executor(prepared.specs.executor, adapters=prepared.adapters)
    return executor.run(prepared.plan, observer or Observers(), stop)


def _loop_running() -> bool:
    with contextlib.suppress(RuntimeError):
        return asyncio.get_running_loop() is not None
    return False


async def arun_sweep(settings: TestSettings, observer: SweepObserver | None = None, stop: SweepStop | None = None
                     ) -> SweepReport:
    """``run_sweep`` for callers inside an event loop: an in-process sweep runs on the caller's
    loop; a distributed one follows its workers from a thread (its Redis reads block)."""
    prepared = prepare_sweep(settings)
    executor = create_executor(prepared.specs.executor, adapters=prepared.adapters)
    return await executor.arun(prepared.plan, observer or Observers(), stop)


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


def _semantic(settings: TestSettings) -> bool:
    """Whether the sweep computes semantic figures: ``--no-semantic``, else ``FARM_SEMANTIC``."""
    return semantic_enabled() if settings.semantic is None else settings.semantic


def _check_numbers(settings: TestSettings) -> None:
    _semantic(settings)  # a bad FARM_SEMANTIC or FARM_SEMANTIC_CACHE: exit 2 before anything runs
    semantic_cache_entries()
    if settings.runs is not None and settings.runs < 1:
        raise SettingsError(f"--runs {settings.runs}: must be at least 1")
    if settings.runs is not None and settings.runs > MAX_RUNS_PER_CASE:
        raise SettingsError(f"--runs {settings.runs}: must be at most {MAX_RUNS_PER_CASE:,} (runs of each case)")
    if settings.parallel < 1:
        raise SettingsError(f"--parallel {settings.parallel}: must be at least 1")
    for flag, rate in (("--min-pass-rate", settings.min_pass_rate),
                       ("--min-overall-pass-rate", settings.min_overall_pass_rate)):
        if rate is not None and not 0.0 <= rate <= 1.0:
            raise SettingsError(f"{flag} {rate}: must be between 0 and 1 (or 0% to 100%)")
    if settings.timeout_s is not None and settings.timeout_s <= 0:
        raise SettingsError("--timeout: must be positive")
    if settings.detach and not settings.broker:
        raise SettingsError("--detach needs --broker (or FARM_BROKER_URL): only a distributed sweep can detach")
    check_ramp(settings.ramp, broker=settings.broker, adaptive=settings.fleet.adaptive_rule() is not None,
               matrix=settings.matrix.given)
