"""The ``farm`` group: gathers every command module's commands."""

from __future__ import annotations

import click

from farm.cli import assess, history, report, sweeps, test, worker


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agent-farm", prog_name="farm")
def main() -> None:
    """agent-farm: run AI-agent test suites many times and report how often they pass.

    Runs in-process by default; give --broker (or FARM_BROKER_URL) to spread a sweep over
    Celery workers. See 'farm test --help'.
    """


main.add_command(test.test)
main.add_command(report.report)
main.add_command(worker.worker)
main.add_command(assess.assess)
for command in (sweeps.results, sweeps.cancel, sweeps.status, sweeps.flower):
    main.add_command(command)
main.add_command(history.compare)
main.add_command(history.history_command)
main.add_command(history.baseline)

__all__ = ["main"]
