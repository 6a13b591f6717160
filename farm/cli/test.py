"""``farm test``: flags → ``TestSettings`` → a prepared sweep → an executor → reports → exit code."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from farm.cli.history import history_flags
from farm.cli.run import run_command
from farm.errors import ExitCode
from farm.models import SweepReport
from farm.observers import (
    JsonlObserver,
    Observers,
    ProgressBar,
    StdoutPrinter,
    SweepObserver,
    VerbosePrinter,
    print_summary,
)
from farm.sweep import PreparedSweep, TestSettings, agent_options, create_executor, prepare_sweep

EXAMPLES = """
\b
Examples:
  farm test -i examples/keyword/tests/inputs.jsonl --runs 5
  farm test -i tests/ -o report.html --runs 20 --parallel 8
  farm test -i "Extract keywords from: cats and dogs" -n keyword
  farm test -i suite.jsonl -n py:agents/my_agent.py:respond -o results.xml
  farm test -i suite.jsonl --broker redis://localhost:6379/0 --runs 50
"""


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    from farm.durations import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _write_report(prepared: PreparedSweep, report: SweepReport, settings: TestSettings) -> None:
    path, fmt = prepared.output_path, prepared.output_format
    if fmt in ("jsonl", "stdout"):
        return
    if fmt == "reporter":
        from farm.reports.agent import render_with_agent, reporter_format

        assert settings.reporter is not None
        content = render_with_agent(report, settings.reporter, reporter_format(path.suffix if path else ""),
                                    agent_options(settings), verbose=settings.verbose)
    else:
        from farm.reports import render_report

        content = render_report(report, fmt)
    if path is None:  # a literal message with -r report.*: the report goes to stdout
        click.echo(content)
    else:
        path.write_text(content, encoding="utf-8")


def run_test(settings: TestSettings, *, progress: bool, history: Any = None) -> int:
    """``farm test``: returns the exit code."""
    from farm.history.session import start_history

    prepared = prepare_sweep(settings)
    session = start_history(history, settings, prepared, lambda line: click.echo(f"farm: {line}", err=True))
    err = Console(stderr=True)
    executor: Any = create_executor(settings)  # the Celery one also has submit (--detach)
    if settings.detach:
        click.echo(executor.submit(prepared.plan))
        return ExitCode.OK
    observers: list[SweepObserver] = []
    stream = None
    if prepared.output_format == "jsonl" and prepared.output_path is not None:
        stream = prepared.output_path.open("w", encoding="utf-8")
        observers.append(JsonlObserver(stream))
    if prepared.output_format == "stdout":
        observers.append(StdoutPrinter(err))
    if progress and err.is_terminal:
        observers.append(ProgressBar(err))
    if settings.verbose:
        observers.append(VerbosePrinter(err))
    try:
        report = executor.run(prepared.plan, Observers(*observers))
    finally:
        if stream is not None:
            stream.close()
    report = session.finish(report)
    _write_report(prepared, report, settings)
    if prepared.output_path is not None:
        print_summary(err, report)
        err.print(f"report: {prepared.output_path}", highlight=False, markup=False)
    from farm.stats import exit_code_for

    return session.exit_code(report, int(exit_code_for(report)))


@click.command(epilog=EXAMPLES)
@click.option("-i", "--input", "input_", required=True, metavar="PATH|MESSAGE",
              help="A .jsonl (Yao) or .hocon/.conf (neuro-san) suite, a directory of suites, or a literal "
                   "message to send once (printed to stdout unless -o).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Report file; the format follows the extension: .jsonl .json .md .html .xml (JUnit). "
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
@click.option("--parallel", type=int, default=1, show_default=True, help="Runs in flight at once.")
@click.option("-v", "--verbose", is_flag=True, help="Print every run that did not pass; tracebacks on errors.")
@click.option("--fail-fast", is_flag=True, help="Stop scheduling runs after the first failed case.")
@click.option("--broker", envvar="FARM_BROKER_URL", default=None, metavar="URL",
              help="Run distributed on this Celery broker (redis://…). Env: FARM_BROKER_URL.")
@click.option("--queue", default="farm", show_default=True, help="Celery queue to submit to.")
@click.option("--detach", is_flag=True, help="Submit, print the sweep id and return (distributed only).")
@click.option("--min-pass-rate", type=float, default=1.0, show_default=True, metavar="P",
              help="A case passes when its pass rate is at least P (0-1); a case's success_ratio wins.")
@click.option("--judge", default=None, metavar="CONNECTOR", help="Connector for gist/not_gist/agent checks.")
@click.option("--server", envvar="FARM_NEURO_SAN_URL", default=None, metavar="URL",
              help="neuro-san server for http/https connections (default http://localhost:8080).")
@click.option("-k", "pattern", default=None, metavar="GLOB", help="Run only cases whose id matches the glob.")
@click.option("--no-progress", is_flag=True, help="No progress bar (off anyway when stderr is not a terminal).")
@click.option("--neuro-san-compat", is_flag=True,
              help="Compare less/greater the way neuro-san's code does (actual > given passes 'less').")
@history_flags
def test(input_: str, no_progress: bool, **flags: Any) -> None:
    """Run test suites against an agent and report pass rates and stability."""
    from farm.history.session import HistoryOptions

    history = HistoryOptions.from_flags(flags)
    settings = TestSettings(input=input_, **flags)
    run_command(lambda: run_test(settings, progress=not no_progress, history=history), verbose=settings.verbose)



__all__ = ["run_test", "test"]
