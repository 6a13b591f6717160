"""``farm test`` as a library: settings → loaded, resolved, planned sweep → outputs.

Everything here raises ``FarmError`` and never prints or exits (``farm.cli`` does that). The
order matters: load and validate every suite, resolve every agent and check the output path
*before* the first run, so that bad input exits 2 with nothing run.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from farm.agents.judge import create_judge_resolver
from farm.agents.options import AgentOptions
from farm.agents.resolve import AgentRef, create_agent, parse_reference, resolve_case_agent
from farm.agents.retry import attempts_from_env
from farm.checks import judges_needed
from farm.errors import AgentResolutionError, InputError, SettingsError
from farm.execute import RunEnvironment
from farm.executors.base import Executor, Observers, SweepObserver, SweepPlan, new_sweep_id
from farm.models import Case, SweepReport
from farm.reports import BUILTIN_REPORTERS, format_for_path
from farm.stats import DEFAULT_MAX_RUN_DETAILS, plan_case
from farm.suites import LoadedInput, load_input


@dataclass(frozen=True)
class TestSettings:
    """Every flag of ``farm test`` (SPEC 3), already parsed."""

    __test__ = False  # not a pytest class

    input: str
    output: str | None = None
    name: str | None = None
    connector: str | None = None
    user: str | None = None
    team: str | None = None
    reporter: str | None = None
    runs: int | None = None
    timeout_s: float | None = None
    parallel: int = 1
    verbose: bool = False
    fail_fast: bool = False
    broker: str | None = None
    queue: str = "farm"
    detach: bool = False
    min_pass_rate: float = 1.0
    judge: str | None = None
    server: str | None = None
    pattern: str | None = None
    neuro_san_compat: bool = False
    cwd: str = field(default_factory=lambda: str(Path.cwd()))


@dataclass
class PreparedSweep:
    """A sweep that passed every input check and is ready to hand to an executor."""

    plan: SweepPlan
    loaded: LoadedInput
    output_path: Path | None
    """Where the report goes; None: stdout (direct message mode)."""
    output_format: str
    """``jsonl``, ``json``, ``markdown``, ``html``, ``junit``, or ``reporter`` (-r agent)."""


def _filter(cases: list[Case], pattern: str | None) -> list[Case]:
    if not pattern:
        return cases
    return [c for c in cases if fnmatch.fnmatchcase(c.id, pattern)]


_NO_RUN_DETAILS = ("jsonl", "stdout", "summary")
"""Outputs that never show kept runs: the JSONL stream writes every run as it completes."""
_REPORTER_SUFFIX = {"json": ".json", "markdown": ".md", "html": ".html", "summary": ".txt"}


def default_output_path(loaded: LoadedInput, now: datetime | None = None, suffix: str = ".jsonl") -> Path | None:
    """``<input dir>/output-YYYYMMDDHHMMSS.jsonl`` (``-2``, ``-3``… when taken); None for a message."""
    if loaded.kind == "message" or loaded.root is None:
        return None
    stamp = (now or datetime.now()).strftime("%Y%m%d%H%M%S")
    path = loaded.root / f"output-{stamp}{suffix}"
    n = 1
    while path.exists():
        n += 1
        path = loaded.root / f"output-{stamp}-{n}{suffix}"
    return path


def _output(settings: TestSettings, loaded: LoadedInput) -> tuple[Path | None, str]:
    builtin = BUILTIN_REPORTERS.get(settings.reporter) if settings.reporter else None
    if settings.output is None:
        if settings.reporter and builtin is None:
            raise SettingsError(f"-r {settings.reporter}: a reporter agent needs -o FILE for its document")
        path = default_output_path(loaded, suffix=_REPORTER_SUFFIX.get(builtin or "", ".jsonl"))
        if path is None:
            return None, "stdout" if builtin is None else builtin
        return path, builtin or "jsonl"
    path = Path(settings.output)
    if not path.is_absolute():
        path = Path(settings.cwd) / path
    if not path.parent.is_dir():
        raise SettingsError(f"-o {settings.output}: directory {path.parent} does not exist")
    if any(path.resolve() == f.resolve() for f in loaded.files):
        raise SettingsError(f"-o {settings.output}: is one of the input suites; it would be overwritten")
    if settings.reporter:
        return path, builtin or "reporter"
    return path, format_for_path(path)


def _check_agents_and_judges(cases: list[Case], agents: dict[str, AgentRef], options: AgentOptions) -> None:
    """Build every adapter and judge once, so a bad manifest, connector or key exits 2 now."""
    for ref in dict.fromkeys(agents.values()):
        create_agent(ref, options)
    resolver = create_judge_resolver(options)
    for use, case in judges_needed(cases).items():
        try:
            resolver(use)
        except AgentResolutionError as exc:
            where = f"{case.source}:{case.line}" if case.line else case.source or case.id
            raise AgentResolutionError(f"{where}: judge {use or '(default)'}: {exc.message}") from None
    attempts_from_env(4)  # a bad FARM_RETRY_ATTEMPTS is a settings error, not a failure in every run


def _resolve_agents(cases: list[Case], settings: TestSettings, options: AgentOptions) -> dict[str, AgentRef]:
    refs: dict[str, AgentRef] = {}
    by_source: dict[tuple[str, str | None, str | None], AgentRef] = {}
    for case in cases:
        key = (case.source or case.base_dir, case.agent, case.connection)
        if key not in by_source:
            by_source[key] = resolve_case_agent(case, settings.name, options)
        refs[case.id] = by_source[key]
    return refs


def agent_options(settings: TestSettings) -> AgentOptions:
    return AgentOptions.from_env(
        Path(settings.cwd), connector=settings.connector, judge=settings.judge, neuro_san_server=settings.server
    )


def prepare_sweep(settings: TestSettings, *, sweep_id: str | None = None) -> PreparedSweep:
    """Load, validate, resolve and plan; raises InputError (exit 2) before anything runs."""
    _check_numbers(settings)
    loaded = load_input(settings.input, cwd=Path(settings.cwd))
    cases = _filter(loaded.cases, settings.pattern)
    if not cases:
        what = f"no case matches -k {settings.pattern!r}" if settings.pattern else "no test cases"
        raise InputError(f"{settings.input}: {what}")
    output_path, output_format = _output(settings, loaded)
    options = agent_options(settings)
    agents = _resolve_agents(cases, settings, options)
    _check_agents_and_judges(cases, agents, options)
    if settings.reporter and settings.reporter not in BUILTIN_REPORTERS:
        parse_reference(settings.reporter, options)  # a missing reporter is bad input, found now
    plans = {c.id: plan_case(c, settings.runs, settings.min_pass_rate) for c in cases}
    sid = sweep_id or new_sweep_id()
    env = RunEnvironment(
        user=settings.user, team=settings.team, connector=settings.connector, timeout_s=settings.timeout_s,
        neuro_san_compat=settings.neuro_san_compat, sweep_id=sid,
    )
    plan = SweepPlan(
        sweep_id=sid, cases=cases, case_plans=plans, agents=agents, env=env, options=options,
        parallel=settings.parallel, fail_fast=settings.fail_fast,
        runs_per_case=max((p.runs for p in plans.values()), default=1),
        metadata=_metadata(settings, loaded),
        max_run_details=0 if output_format in _NO_RUN_DETAILS else DEFAULT_MAX_RUN_DETAILS,
    )
    return PreparedSweep(plan, loaded, output_path, output_format)


def create_executor(settings: TestSettings) -> Executor:
    """In-process unless a broker is given; Celery is imported only for a distributed sweep."""
    if settings.broker:
        from farm.executors.celery import CeleryExecutor

        executor: Executor = CeleryExecutor(broker_url=settings.broker, queue=settings.queue, detach=settings.detach)
        return executor
    from farm.executors.local import LocalExecutor

    return LocalExecutor()


def run_sweep(settings: TestSettings, observer: SweepObserver | None = None) -> SweepReport:
    """``farm test`` from Python: validate, run (in-process or distributed), return the report.

    Writes no file; pass an observer (e.g. ``farm.cli.JsonlObserver``) to follow the runs.
    """
    prepared = prepare_sweep(settings)
    return create_executor(settings).run(prepared.plan, observer or Observers())


def _metadata(settings: TestSettings, loaded: LoadedInput) -> dict[str, Any]:
    return {
        "input": settings.input if loaded.kind == "message" else str(loaded.root),
        "min_pass_rate": settings.min_pass_rate,
        "runs": settings.runs,
        "reporter": settings.reporter,
    }


def _check_numbers(settings: TestSettings) -> None:
    if settings.runs is not None and settings.runs < 1:
        raise SettingsError(f"--runs {settings.runs}: must be at least 1")
    if settings.parallel < 1:
        raise SettingsError(f"--parallel {settings.parallel}: must be at least 1")
    if not 0.0 <= settings.min_pass_rate <= 1.0:
        raise SettingsError(f"--min-pass-rate {settings.min_pass_rate}: must be between 0 and 1")
    if settings.timeout_s is not None and settings.timeout_s <= 0:
        raise SettingsError("--timeout: must be positive")
    if settings.detach and not settings.broker:
        raise SettingsError("--detach needs --broker (or FARM_BROKER_URL): only a distributed sweep can detach")
