"""``farm report JOURNAL|SWEEP_ID -o FILE…``: any report format, from a run journal or a
distributed sweep, complete or partial (SPEC 10).

A path (or the id of a journal under ``$FARM_DATA_DIR/journals/``) is read as a journal; any
other value is a distributed sweep id, looked up on the broker's store. The exit code is the
report's verdict, by the table of ``farm test``; a partial report is never green (3).
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from farm.cli.console import print_summary, say
from farm.cli.options import StrictCommand
from farm.cli.run import run_command
from farm.cli.worker import broker_option
from farm.errors import BrokerError, InputError, SettingsError
from farm.models import SweepReport
from farm.reports.outputs import OutputSpec, plan_outputs, write_report
from farm.settings import FarmSettings
from farm.stats import exit_code_for
from farm.suites import looks_like_path
from farm.sweep.journal import journal_path
from farm.wording import plural


def find_journal(source: str, data_dir: Path) -> Path | None:
    """The journal ``source`` names: a file path, or a sweep id with a journal here; else None."""
    path = Path(source).expanduser()
    if path.is_file():
        return path
    if looks_like_path(source):
        raise InputError(f"{source}: no such file or directory")
    by_id = journal_path(data_dir, source)
    return by_id if by_id.is_file() else None


def load_report(source: str, broker: str) -> SweepReport:
    """The report of a journal, or of a distributed sweep on ``broker``."""
    settings = FarmSettings.from_env(broker_url=broker)
    journal = find_journal(source, settings.data_dir)
    if journal is not None:
        from farm.sweep.replay import report_from_journal
        from farm.sweep.stream_report import is_event_stream, report_from_stream

        if is_event_stream(journal):  # a `-o report.jsonl` stream: render the cases it holds
            return report_from_stream(journal)
        return report_from_journal(journal)
    from farm.distributed.delivery.close import report_so_far
    from farm.distributed.store.sweep_store import SweepStore

    store = SweepStore.from_url(settings.store_url, ttl=settings.result_ttl_s)
    try:
        store.ping()
    except BrokerError as exc:
        raise InputError(f"{source}: no journal of that sweep in {journal_path(settings.data_dir, source).parent}, "
                         f"and no broker to ask ({exc.message})") from None
    return report_so_far(store, source)


def render_reports(source: str, outputs: tuple[str, ...], broker: str) -> int:
    """``farm report``: write every ``-o``, print the summary, return the verdict's exit code."""
    if not outputs:
        raise SettingsError("farm report needs at least one -o FILE (.jsonl .json .md .html .xml)")
    targets = plan_outputs(OutputSpec(outputs), root=None, inputs=[], cwd=Path.cwd())
    report = load_report(source, broker)
    for target in targets:
        assert target.path is not None
        write_report(report, target.path, target.format)
    err = Console(stderr=True)
    if bad := report.envelope.journal_bad_lines:
        say(err, f"farm: warning: {source}: {plural(bad.count, 'bad line')} skipped (first: {bad.first}); "
                 "the report holds every run the other lines recorded")
    print_summary(err, report)
    for target in targets:
        say(err, f"report: {target.path}")
    return int(exit_code_for(report))


@click.command(cls=StrictCommand)
@click.argument("source", metavar="JOURNAL|SWEEP_ID")
@click.option("-o", "--output", "outputs", multiple=True, type=click.Path(dir_okay=False),
              help="Report file, repeatable; the format follows the extension: .jsonl .json .md .html .xml.")
@broker_option
def report(source: str, outputs: tuple[str, ...], broker: str) -> None:
    """Render reports from a run journal or a distributed sweep, complete or partial.

    JOURNAL is a journal file (or its sweep id): farm test writes one for every sweep under
    $FARM_DATA_DIR/journals/ (default ~/.local/share/agent-farm/journals/). A `-o report.jsonl`
    stream renders too (its cases' figures, no run details). Any other value is the id of a
    distributed sweep on the broker.
    """
    run_command(lambda: render_reports(source, outputs, broker))


__all__ = ["find_journal", "load_report", "render_reports", "report"]
