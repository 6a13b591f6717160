"""``farm test``: flags → ``TestSettings`` → a prepared sweep → an executor → reports → exit code.

Before the first agent call every input and every ``-o`` is checked (exit 2 otherwise). While
the sweep runs, its run journal records every completed run, and Ctrl-C / SIGTERM stop it
cleanly (``farm.cli.signals``): the reports are still written from what ran.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, TextIO

import click
from rich.console import Console

from farm.agents.options import AgentOptions
from farm.agents.reaper import contained
from farm.agents.secrets import masking, redact
from farm.api import DEFAULT_PARALLEL, PreparedSweep, TestSettings, create_executor, prepare_sweep
from farm.cli.console import FailureDigest, print_summary, say
from farm.cli.extras import start_extras, yao_flags
from farm.cli.fleet import fleet_flags
from farm.cli.history import history_flags
from farm.cli.load_progress import LoadProgress
from farm.cli.options import RATE, StrictCommand
from farm.cli.otel_flags import OtelFlags, otel_flags
from farm.cli.run import run_command
from farm.cli.signals import StopSignals
from farm.errors import ExitCode, FarmError, ReporterError
from farm.models import SweepReport
from farm.plan.fleet import FleetFlags
from farm.quarantine.marks import quarantine_lines
from farm.reports.outputs import OutputSpec, OutputTarget, write_document, write_report
from farm.settings import DEFAULT_QUEUE, FarmSettings, safe_url
from farm.stats import exit_code_for
from farm.sweep.executor import ExecutorOptions
from farm.sweep.journal import RunJournal, open_journal, prune_journals
from farm.sweep.lifecycle import StopReason, SweepStop
from farm.sweep.observers import JsonlObserver, Observers, ProgressBar, StdoutPrinter, SweepObserver

EXAMPLES = """
\b
Examples:
  farm test -i examples/keyword/tests/inputs.jsonl --runs 5
  farm test -i tests/ -o report.html -o junit.xml --runs 20
  farm test -m "Extract keywords from: cats and dogs" -n py:examples/keyword/agent.py:respond
  farm test -i suite.jsonl -k smoke -k "billing-*" --min-pass-rate 90%
  farm test -i suite.jsonl --broker redis://localhost:6379/0 --runs 50

\b
Exit codes (the first that applies wins):
  2    bad input or configuration: nothing was run
  130  interrupted by Ctrl-C (143: by SIGTERM); the reports hold what ran
  3    runtime error: broker or workers lost, crash, sweep failed or abandoned;
       or the agent could not be reached (every run: connection failed or 401/403)
  5    stopped: the provider's quota is exhausted
  4    stopped by a budget
  1    some case failed, or the overall pass rate is below --min-overall-pass-rate
  0    every case passed

\b
Every completed run is also appended to a journal under $FARM_DATA_DIR/journals/
(default ~/.local/share/agent-farm; kept FARM_JOURNAL_DAYS, default 7): farm report
JOURNAL -o FILE renders it, even after a crash or a second Ctrl-C.
"""


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    from farm.durations import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _render(target: OutputTarget, report: SweepReport, spec: OutputSpec, options: AgentOptions) -> None:
    if target.format == "reporter":
        from farm.reports.agent import render_with_agent, reporter_format

        assert spec.reporter is not None and target.path is not None
        content = render_with_agent(report, spec.reporter, reporter_format(target.path.suffix), options,
                                    verbose=spec.verbose)
        write_document(target.path, content)
    elif target.path is None:  # a literal message with -r report.*: the report goes to stdout
        from farm.reports import render_report

        click.echo(redact(render_report(report, target.format)))
    else:
        write_report(report, target.path, target.format)


def write_outputs(prepared: PreparedSweep, report: SweepReport, err: Console) -> None:
    """Every requested report that is not streamed; one failing leaves the others written, then
    raises ReporterError (exit 3)."""
    targets, spec = prepared.outputs, prepared.specs.outputs
    failed: list[str] = []
    for target in targets:
        if target.format in ("jsonl", "stdout"):
            continue  # streamed while the sweep ran
        try:
            _render(target, report, spec, prepared.options)
        except FarmError as exc:
            say(err, f"farm: {exc.message}")
            failed.append(str(target.path))
    if failed:
        raise ReporterError(f"could not write {', '.join(failed)} (the other reports were written)")


def _observers(prepared: PreparedSweep, err: Console, streams: contextlib.ExitStack, journal: RunJournal,
               progress: bool) -> list[SweepObserver]:
    observers: list[SweepObserver] = [journal]
    for target in prepared.outputs:
        if target.format == "jsonl" and target.path is not None:
            stream: TextIO = streams.enter_context(target.path.open("w", encoding="utf-8"))
            observers.append(JsonlObserver(masking(stream)))
        elif target.format == "stdout":
            observers.append(StdoutPrinter(err))
    if progress and err.is_terminal:
        observers.append(ProgressBar(err))
    if prepared.specs.verbose:
        observers.append(FailureDigest(err))
    return observers


def _notices(prepared: PreparedSweep, grace_s: float, journal: str) -> dict[str, str]:
    sid = prepared.plan.sweep_id
    if prepared.specs.executor.broker:
        first = (f"interrupted: stopping sweep {sid} (cancelled on the workers: runs not started are dropped); "
                 "press Ctrl-C again to quit at once")
    else:
        first = (f"interrupted: no new runs; runs in flight get {grace_s:g}s, then the reports are written; "
                 "press Ctrl-C again to quit at once")
    second = f"quitting at once: every completed run is in the journal {journal} (farm report {journal} -o FILE)"
    return {"first_notice": first, "second_notice": second}


def _announce(prepared: PreparedSweep, executor: ExecutorOptions, err: Console) -> None:
    """A distributed sweep's id as it starts: ``farm status`` and Flower find it by that."""
    sid = prepared.plan.sweep_id
    say(err, f"sweep {sid} on {safe_url(str(executor.broker))} (queue {executor.queue}): "
             f"farm status; farm results {sid}; farm cancel {sid}")
    flower = os.environ.get("FARM_FLOWER_URL")
    if flower:
        say(err, f"flower: {flower.rstrip('/')}/tasks (search {sid})")


def _finish(prepared: PreparedSweep, report: SweepReport, err: Console, journal: str) -> None:
    write_outputs(prepared, report, err)
    if any(t.path is not None for t in prepared.outputs):
        print_summary(err, report)
    if prepared.specs.executor.broker and report.outcome.stopped == StopReason.INTERRUPTED:
        say(err, f"sweep {prepared.plan.sweep_id} cancelled on the workers")
    for target in prepared.outputs:
        if target.path is not None:
            say(err, f"report: {target.path}")
    if prepared.specs.verbose or report.outcome.stopped:
        say(err, f"journal: {journal}")
    for line in quarantine_lines(report.results):
        say(err, line)
    if isinstance(bias := report.metadata.get("retry_bias"), dict):
        say(err, str(bias["line"]))


def _submit_detached(executor: Any, prepared: PreparedSweep, history: Any, err: Console) -> int:
    """``--detach``: print the sweep id once the plan is stored; the workers run it."""
    click.echo(executor.submit(prepared.plan))
    if prepared.plan.metadata.get("history") == "worker":
        tags = " ".join(getattr(history, "tags", ())) or "none"
        say(err, f"farm: the sweep (tags: {tags}) is recorded in the history when `farm results "
                 f"{prepared.plan.sweep_id}` collects it (and by a worker with FARM_HISTORY_URL)")
    return ExitCode.OK


def run_test(settings: TestSettings, *, progress: bool, history: Any = None, quarantine: str | None = None,
             estimate_workers: int | None = None, otel: OtelFlags | None = None) -> int:
    """``farm test``: returns the exit code."""
    from farm.history.session import start_history
    from farm.quarantine.plan import attach_quarantine

    farm_settings = FarmSettings.from_env()
    err = Console(stderr=True)
    otel = otel or OtelFlags()
    with LoadProgress(err) if progress and err.is_terminal else contextlib.nullcontext() as read:
        prepared = prepare_sweep(settings, read=read)
    attach_quarantine(prepared, quarantine)  # a bad entry is exit 2 before anything runs
    specs = prepared.specs  # what follows takes these, never ``settings`` whole
    if estimate_workers is not None and specs.extras.listing is None:  # --estimate: nothing else runs
        from farm.cli.estimate import run_estimate

        return run_estimate(prepared, history, estimate_workers)
    around = start_extras(prepared)  # None: --dry-run listed the cases
    if around is None:
        return ExitCode.OK
    exporters = otel.observers(prepared.plan, specs.executor.broker, lambda line: say(err, f"farm: {line}"))
    session = start_history(history, specs.history, prepared, lambda line: click.echo(f"farm: {line}", err=True))
    executor: Any = create_executor(specs.executor, farm_settings, prepared.adapters)  # the Celery one: submit too
    if specs.executor.detach:
        return _submit_detached(executor, prepared, history, err)
    prune_journals(farm_settings.data_dir, farm_settings.journal_days)
    return _run_attached(prepared, executor, around, session, exporters,
                         farm_settings=farm_settings, err=err, progress=progress)


def _run_attached(prepared: PreparedSweep, executor: Any, around: Any, session: Any,
                  exporters: list[SweepObserver], *, farm_settings: FarmSettings, err: Console, progress: bool) -> int:
    """Run the sweep here (or follow its workers) into the run journal and the outputs; returns
    the exit code. A stop signal ends it with what ran."""
    stop = SweepStop()
    with contextlib.ExitStack() as streams:
        streams.enter_context(contained())  # what agents leave running ends with the sweep (farm.agents.reaper)
        journal = RunJournal(masking(streams.enter_context(open_journal(farm_settings.data_dir,
                                                                        prepared.plan.sweep_id))), prepared.plan)
        journal_name = str(journal.path)
        observers = _observers(prepared, err, streams, journal, progress)
        observers += exporters
        if prepared.specs.executor.broker:
            _announce(prepared, prepared.specs.executor, err)
        with StopSignals(stop, **_notices(prepared, farm_settings.stop_grace_s, journal_name)) as signals:
            try:
                report = around.run(lambda: executor.run(prepared.plan, Observers(*observers), stop))
            except Exception:  # the farm failed (or crashed): what ran is still on disk
                say(err, f"every completed run is in the journal {journal_name} "
                         f"(farm report {journal_name} -o FILE)")
                raise
            streams.close()  # the JSONL reports are complete: close them before the rest is written
            report = session.finish(report)
            try:
                _finish(prepared, report, err, journal_name)
            except ReporterError:
                if signals.exit_code is None:
                    raise
            return int(signals.exit_code or session.exit_code(report, int(exit_code_for(report))))


@click.command(cls=StrictCommand, epilog=EXAMPLES)
@click.option("-i", "--input", "input_", default=None, metavar="PATH",
              help="A .jsonl (Yao) or .hocon/.conf (neuro-san) suite, or a directory of suites. A value that "
                   "looks like a path (a / in it, a suite or .json extension, a leading . or ~) or is a single "
                   "word is always one: when it does not exist, exit 2 (--yao-compat: a single word is a "
                   "message). Text with spaces that names no file is sent as a message, as -m does.")
@click.option("-m", "--message", default=None, metavar="TEXT",
              help="Send TEXT to the agent once (direct message mode); the answer is printed to stdout unless -o.")
@click.option("-o", "--output", "outputs", multiple=True, type=click.Path(dir_okay=False),
              help="Report file, repeatable (each written from the same sweep); the format follows the "
                   "extension: .jsonl .json .md .html .xml (JUnit). Checked writable before the first run. "
                   "Default: <input dir>/output-YYYYMMDDHHMMSS.jsonl.")
@click.option("-n", "--name", default=None, metavar="AGENT",
              help="Agent under test: an id under the agents root (keyword, workers.system.keyword), "
                   "py:module:function, py:file.py:function, http(s)://…, neuro-san://host:port/agent, "
                   "cmd:program. Default: the package.yao found walking up from the suite.")
@click.option("-c", "--connector", default=None, help="Override the connector of prompt agents (e.g. openai.gpt-4o).")
@click.option("-u", "--user", default=None, help="Test user id for every case (default: the case's, else test-user).")
@click.option("-t", "--team", default=None, help="Test team id for every case (default: the case's, else test-team).")
@click.option("-r", "--reporter", default=None, metavar="ID",
              help="report.json, report.markdown, report.html, report.summary, or an agent id whose answer "
                   "is written to -o.")
@click.option("--runs", type=int, default=None,
              help="Runs per case for stability analysis (default 1, or the case's success_ratio n).")
@click.option("--timeout", "timeout_s", callback=_duration, default=None, metavar="DURATION",
              help="Default whole-run timeout per case, e.g. 30s, 2m, 1m30s (default 5m).")
@click.option("--parallel", type=int, default=DEFAULT_PARALLEL, show_default=True,
              help="Runs in flight at once (in-process).")
@click.option("-v", "--verbose", is_flag=True,
              help="After the sweep, print each distinct failure once, with its count, an example and its "
                   "traceback.")
@click.option("--fail-fast", is_flag=True, help="Stop scheduling runs after the first failed case.")
@click.option("--isolate", is_flag=True,
              help="Run sync python agents in a pool of subprocesses: one that calls os._exit or segfaults "
                   "is a crashed run, not a dead farm.")
@click.option("--broker", envvar="FARM_BROKER_URL", default=None, metavar="URL",
              help="Run distributed on this Celery broker: redis://, rediss:// (TLS) or amqp:// (RabbitMQ, with "
                   "FARM_STORE_URL). Env: FARM_BROKER_URL.")
@click.option("--queue", envvar="FARM_QUEUE", default=DEFAULT_QUEUE, show_default=True,
              help="Celery queue to submit to. Env: FARM_QUEUE.")
@click.option("--detach", is_flag=True, help="Submit, print the sweep id and return (distributed only).")
@click.option("--min-pass-rate", type=RATE, default=1.0, show_default=True, metavar="RATE",
              help="A case passes when its pass rate is at least RATE (0.95 or 95%); a case's success_ratio wins.")
@click.option("--min-overall-pass-rate", type=RATE, default=None, metavar="RATE",
              help="Also fail (exit 1) when the share of all runs that passed is below RATE (0.9 or 90%).")
@click.option("--judge", default=None, metavar="CONNECTOR", help="Connector for gist/not_gist/agent checks.")
@click.option("--server", envvar="FARM_NEURO_SAN_URL", default=None, metavar="URL",
              help="neuro-san server for http/https connections (default http://localhost:8080).")
@click.option("-k", "patterns", multiple=True, metavar="PATTERN",
              help="Run only cases whose id contains PATTERN, or matches it as a glob when it has * ? [; "
                   "repeatable (any match).")
@click.option("--no-progress", is_flag=True,
              help="No progress bar, and no line counting the cases of a suite that takes over a second to load "
                   "(both off anyway when stderr is not a terminal).")
@click.option("--quarantine", "quarantine", default=None, type=click.Path(dir_okay=False), metavar="FILE",
              help="Quarantine entries for every case (default: each project's farm-quarantine.toml): a "
                   "quarantined case runs and is reported but does not set the exit code until its date.")
@click.option("--estimate", is_flag=True,
              help="Print the sweep's expected calls, tokens, cost and wall time (from the history of the same "
                   "suite, else one probe call per agent and judge) and run nothing else; with --budget, "
                   "exit 4 when over it.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Only with --estimate (an error without it): the workers the sweep will run on, each running "
                   "--parallel runs at once (default 1).")
@click.option("--neuro-san-compat", is_flag=True,
              help="Compare less/greater the way neuro-san's code does (actual > given passes 'less').")
@fleet_flags
@history_flags
@yao_flags
@otel_flags
def test(input_: str | None, outputs: tuple[str, ...], patterns: tuple[str, ...], no_progress: bool,
         **flags: Any) -> None:
    """Run test suites against an agent and report pass rates and stability."""
    from farm.history.session import HistoryOptions

    history = HistoryOptions.from_flags(flags)  # takes the history flags out of ``flags``
    fleet = FleetFlags.from_flags(flags)  # and the fleet-control flags
    quarantine = flags.pop("quarantine", None)
    workers, estimate = flags.pop("workers", None), flags.pop("estimate", False)
    if workers is not None and not estimate:
        raise click.UsageError(f"--workers {workers}: only with --estimate (farm worker runs the workers)")
    estimate_workers = (workers or 1) if estimate else None
    otel = OtelFlags.from_flags(flags)  # and --otel, --otel-runs
    settings = TestSettings(input=input_, outputs=outputs, patterns=patterns, fleet=fleet, **flags)
    run_command(lambda: run_test(settings, progress=not no_progress, history=history, quarantine=quarantine,
                                 estimate_workers=estimate_workers, otel=otel), verbose=settings.verbose)


__all__ = ["run_test", "test", "write_outputs"]
