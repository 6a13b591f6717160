"""``farm test``'s sweep, once its flags are read: ``TestSettings`` → a prepared sweep → an executor →
reports → exit code (the command and its flags: ``farm.cli.test``, which imports this module when it
runs, so that ``farm test --help`` loads none of it).

Before the first agent call every input and every ``-o`` is checked (exit 2 otherwise). While
the sweep runs, its run journal records every completed run, and Ctrl-C / SIGTERM stop it
cleanly (``farm.cli.signals``): the reports are still written from what ran.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import sys
from typing import TYPE_CHECKING, TextIO

import click
from rich.console import Console

from farm.agents.options import AgentOptions
from farm.agents.reaper import contained
from farm.agents.secrets import masking, redact
from farm.api import PreparedSweep, TestSettings, create_executor, prepare_sweep
from farm.cli.bundling import sweep_bundle
from farm.cli.console import FailureDigest, print_summary, say
from farm.cli.extras import SweepAround, start_extras
from farm.cli.load_progress import LoadProgress
from farm.cli.otel_flags import OtelFlags
from farm.cli.signals import StopSignals
from farm.errors import ExitCode, FarmError, ReporterError
from farm.models import SweepReport
from farm.models.quarantine import quarantine_lines
from farm.plan.sweep_plan import new_sweep_id
from farm.reports.outputs import OutputSpec, OutputTarget, write_document, write_report
from farm.settings import DEFAULT_BROKER_URL, FarmSettings, safe_url, sweep_queue
from farm.stats import exit_code_for
from farm.sweep.executor import Executor, ExecutorOptions, Submitter
from farm.sweep.journal import RunJournal, open_journal, prune_journals
from farm.sweep.lifecycle import StopReason, SweepStop
from farm.sweep.observers import JsonlObserver, Observers, ProgressBar, StdoutPrinter, SweepObserver

if TYPE_CHECKING:  # the history's modules load only for a sweep that records (``start_history``)
    from farm.history.session import HistoryOptions, HistorySession


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
        if target.format == "jsonl":
            stream: TextIO = sys.stdout  # -o -: stdout, where nothing else of farm test's goes
            if target.path is not None:
                stream = streams.enter_context(target.path.open("w", encoding="utf-8"))
            observers.append(JsonlObserver(masking(stream), journal.lines))  # the journal's lines, made once
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
    where = _where_flags(executor)
    say(err, f"sweep {sid} on {safe_url(str(executor.broker))} (queue {executor.queue}): "
             f"farm status{where}; farm results {sid}{where}; farm cancel {sid}{where}")
    flower = os.environ.get("FARM_FLOWER_URL")
    if flower:
        say(err, f"flower: {flower.rstrip('/')}/tasks (search {sid})")


def _where_flags(executor: ExecutorOptions) -> str:
    """The flag a pasted ``farm status`` needs to ask the same broker as this sweep: none when it
    is the environment's or the default (a password shows as ***: fill it in)."""
    if executor.broker == (os.environ.get("FARM_BROKER_URL") or DEFAULT_BROKER_URL):
        return ""
    return f" --broker {shlex.quote(safe_url(str(executor.broker)))}"


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
    if (bias := report.envelope.retry_bias) is not None:
        say(err, bias.line)
    if (load := report.summary.load_bias) is not None and load.flagged:  # SPEC 25: said when it flags a case
        say(err, load.line)
    if report.summary.ramp is not None:
        say(err, report.summary.ramp.line)


def _submit_detached(executor: Submitter, prepared: PreparedSweep, history: HistoryOptions | None,
                     err: Console) -> int:
    """``--detach``: print the sweep id once the plan is stored; the workers run it."""
    click.echo(executor.submit(prepared.plan))
    sid, where = prepared.plan.sweep_id, _where_flags(prepared.specs.executor)  # pasted, they ask this broker
    if prepared.plan.queue == sweep_queue(sid):  # --own-queue: what works on it
        say(err, f"farm: sweep {sid} is on its own queue: workers for it: "
                 f"farm worker --sweep {sid}{where} [--exit-when-idle SECONDS]")
    if prepared.plan.envelope.recorder == "worker":
        tags = " ".join(history.tags if history is not None else ()) or "none"
        say(err, f"farm: the sweep (tags: {tags}) is recorded in the history when `farm results "
                 f"{sid}{where}` collects it (and by a worker with FARM_HISTORY_URL)")
    return ExitCode.OK


def _quarantined(prepared: PreparedSweep, quarantine: str | None, err: Console) -> PreparedSweep:
    """The sweep whose plan carries its quarantined cases' entries (a bad entry is exit 2 before
    anything runs; a typo is said)."""
    from farm.quarantine.files import any_project_file

    loaded = prepared.loaded
    sources = [str(f) for f in loaded.files] or [str(loaded.root)]
    if not quarantine and not any_project_file(sources):
        return prepared  # no file: its reader and matching (farm.quarantine.plan) are not loaded
    from farm.quarantine.plan import quarantine_plan

    held = quarantine_plan(((p.id, p.case.source) for p in prepared.plan.cases), sources, quarantine,
                           lambda line: say(err, f"farm: warning: {line}"))
    return prepared.with_plan(prepared.plan.with_envelope(quarantine=held)) if held else prepared


def run_test(settings: TestSettings, *, progress: bool, history: HistoryOptions | None = None,
             quarantine: str | None = None, estimate_workers: int | None = None, detect: float | None = None,
             otel: OtelFlags | None = None, own_queue: bool = False, bundle_max: int | None = None) -> int:
    """``farm test``: the exit code. ``own_queue``: the sweep goes on ``farm.sweep.{id}``, its id chosen here;
    ``bundle_max``: the bytes a distributed sweep's bundle may hold (``farm.cli.bundling``; None: none)."""
    from farm.history.session import start_history

    farm_settings = FarmSettings.from_env()
    err = Console(stderr=True)
    otel = otel or OtelFlags()
    with LoadProgress(err) if progress and err.is_terminal else contextlib.nullcontext() as read:
        sid = new_sweep_id()
        if own_queue:
            settings = dataclasses.replace(settings, queue=sweep_queue(sid))
        prepared = prepare_sweep(settings, sweep_id=sid, read=read)
    prepared = _quarantined(prepared, quarantine, err)
    specs = prepared.specs  # what follows takes these, never ``settings`` whole
    if estimate_workers is not None and specs.extras.listing is None:  # --estimate: nothing else runs
        from farm.cli.estimate import run_estimate

        return run_estimate(prepared, history, estimate_workers, detect=detect)
    around = start_extras(prepared)  # None: --dry-run listed the cases
    if around is None:
        return ExitCode.OK
    bundle = sweep_bundle(prepared, settings, bundle_max)  # over the cap: exit 2 before anything is stored
    exporters = otel.observers(specs.executor.broker, lambda line: say(err, f"farm: {line}"))
    session, plan = start_history(history, specs.history, prepared.plan, prepared.loaded,
                                  lambda line: click.echo(f"farm: {line}", err=True))
    prepared = prepared.with_plan(plan.with_envelope(otel=True) if otel.by_worker(specs.executor.broker) else plan)
    executor = create_executor(specs.executor, farm_settings, prepared.adapters)
    if isinstance(executor, Submitter) and bundle is not None:  # the Celery one: the bundle before the plan
        executor.carry(bundle)
    if isinstance(executor, Submitter) and specs.executor.detach:
        return _submit_detached(executor, prepared, history, err)
    code = _run_attached(prepared, executor, around, session, exporters,
                         farm_settings=farm_settings, err=err, progress=progress)
    for exporter in exporters:  # an OpenTelemetry export that failed: one line, after the summary
        if problem := getattr(exporter, "problem", None):
            say(err, f"farm: {problem}")
    return code


def _run_attached(prepared: PreparedSweep, executor: Executor, around: SweepAround, session: HistorySession,
                  exporters: list[SweepObserver], *, farm_settings: FarmSettings, err: Console, progress: bool) -> int:
    """Run the sweep here (or follow its workers) into the run journal and the outputs; returns
    the exit code. A stop signal ends it with what ran."""
    prune_journals(farm_settings.data_dir, farm_settings.journal_days)
    stop = SweepStop()
    if isinstance(executor, Submitter):
        executor.reach()  # an unreachable broker: one error, no sweep id nor journal announced
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



__all__ = ["run_test", "write_outputs"]
