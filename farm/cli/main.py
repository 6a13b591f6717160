"""The ``farm`` group: every command, each module imported only when its command runs.

``farm test`` is the command users wait on, and importing every other command with it
(``assess`` brings Jinja, ``compare`` the statistics, ``worker`` the supervisor) cost about
0.2 s of each start. The group therefore knows its commands by name and module
(click's "lazily loading subcommands" pattern). ``farm --help`` lists them all from
``SUMMARIES``, each command's first sentence, without importing one (importing them all cost
``farm --help`` about 0.5 s); tests/cli/test_cli_startup.py checks the listing against the commands.
"""

from __future__ import annotations

import difflib
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
    "judge-check": "farm.cli.judge_check:judge_check",
}
"""Command name → ``module:attribute`` of its click command."""

SUMMARIES = {
    "test": "Run test suites against an agent and report pass rates and stability.",
    "report": "Render reports from a run journal or a distributed sweep, complete or partial.",
    "worker": "Start Celery workers with the farm's defaults, one process per core, under a supervisor that starts "
              "a new one when one dies; other arguments go to Celery as they are.",
    "assess": "Group a sweep's failures into failure modes: from a JSON report, or by running the suite.",
    "results": "Re-attach to a distributed sweep, live or finished, and write its results.",
    "cancel": "Cancel a distributed sweep: runs not started yet are dropped.",
    "status": "Show queues, workers and sweeps in flight.",
    "flower": "Start Flower on the farm's broker, behind basic auth (FARM_FLOWER_USER/FARM_FLOWER_PASSWORD).",
    "compare": "Compare two sweeps case by case: exit 1 when a case regressed.",
    "history": "Recorded sweeps with their pass rates, and each case's trend (sparkline, class changes).",
    "baseline": "Bless sweeps as named baselines (farm compare NAME last, farm test --baseline NAME).",
    "quarantine": "Which cases to quarantine, and which entries of farm-quarantine.toml can go (from the history).",
    "bisect": "Find the first commit between GOOD and BAD where cases pass less often, with statistics.",
    "view": "Browse recorded sweeps, their reports, comparisons and case trends in a local web app (read-only).",
    "judge-check": "Ask a sweep's judges again about the outputs they judged: per criterion the judge's flip rate.",
}
"""Command name → the first sentence of its help: what ``farm --help`` lists."""


class LazyGroup(click.Group):
    """A group whose commands are imported on first use."""

    def __init__(self, *args: Any, lazy: dict[str, str], summaries: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy
        self.summaries = summaries

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def main(self, *args: Any, **kwargs: Any) -> Any:
        collector.freeze_at_exit()  # the process ends with the command: skip its last collections
        return super().main(*args, **kwargs)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's listing of the commands, those not imported yet by their summary (none imported)."""
        listed = [self.commands.get(name) or click.Command(name, help=self.summaries[name])
                  for name in self.list_commands(ctx)]
        click.Group.format_commands(click.Group(self.name, commands=listed), ctx, formatter)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                               list[str]]:
        """Click's, with "did you mean" for a mistyped command (``farm tset``)."""
        name = click.utils.make_str(args[0]) if args else ""
        if args and not name.startswith("-") and self.get_command(ctx, name) is None:
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.6)
            if close:
                ctx.fail(f"No such command {name!r}. Did you mean {close[0]!r}?")
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy or cmd_name in self.commands:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = self.lazy[cmd_name].partition(":")
        with collector.paused():  # importing a command makes objects that all stay (farm.collector)
            command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command) or command.name != cmd_name:
            raise RuntimeError(f"{self.lazy[cmd_name]} is not the click command {cmd_name!r}")
        self.add_command(command)
        return command


@click.group(cls=LazyGroup, lazy=COMMANDS, summaries=SUMMARIES,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agent-farm", prog_name="farm")
def main() -> None:
    """agent-farm: run AI-agent test suites many times and report how often they pass.

    Runs in-process by default; give --broker (or FARM_BROKER_URL) to spread a sweep over
    Celery workers. See 'farm test --help'.
    """


__all__ = ["COMMANDS", "SUMMARIES", "LazyGroup", "main"]
