"""The ``farm`` group: every command, each module imported only when its command runs.

``farm test`` is the command users wait on, and importing every other command with it
(``assess`` brings Jinja, ``compare`` the statistics, ``worker`` the supervisor) cost about
0.2 s of each start. The group therefore knows its commands by name and module
(click's "lazily loading subcommands" pattern); ``farm --help`` still lists them all.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from farm import collector

COMMANDS = {
    "test": "farm.cli.test:test",
    "report": "farm.cli.report:report",
    "worker": "farm.cli.worker:worker",
    "assess": "farm.cli.assess:assess",
    "results": "farm.cli.sweeps:results",
    "cancel": "farm.cli.sweeps:cancel",
    "status": "farm.cli.sweeps:status",
    "flower": "farm.cli.sweeps:flower",
    "compare": "farm.cli.history:compare",
    "history": "farm.cli.history:history_command",
    "baseline": "farm.cli.history:baseline",
    "quarantine": "farm.cli.quarantine:quarantine",
    "bisect": "farm.cli.bisect:bisect",
    "view": "farm.cli.view:view",
}
"""Command name → ``module:attribute`` of its click command."""


class LazyGroup(click.Group):
    """A group whose commands are imported on first use."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def main(self, *args: Any, **kwargs: Any) -> Any:
        collector.freeze_at_exit()  # the process ends with the command: skip its last collections
        return super().main(*args, **kwargs)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy or cmd_name in self.commands:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = self.lazy[cmd_name].partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command) or command.name != cmd_name:
            raise RuntimeError(f"{self.lazy[cmd_name]} is not the click command {cmd_name!r}")
        self.add_command(command)
        return command


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agent-farm", prog_name="farm")
def main() -> None:
    """agent-farm: run AI-agent test suites many times and report how often they pass.

    Runs in-process by default; give --broker (or FARM_BROKER_URL) to spread a sweep over
    Celery workers. See 'farm test --help'.
    """


__all__ = ["COMMANDS", "LazyGroup", "main"]
