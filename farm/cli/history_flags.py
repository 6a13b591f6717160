"""The history flags: ``farm test``'s (``history_flags``) and the history commands' shared options.

Apart from the commands (``farm.cli.history``): ``farm test`` takes its flags from here without
building the ``compare``/``history``/``baseline`` commands it does not run.
"""

from __future__ import annotations

from typing import Any

import click

from farm.defaults import DEFAULT_ALPHA, DEFAULT_MIN_DROP

__all__ = ["alpha_option", "history_flags", "history_option", "min_drop_option"]

history_option = click.option(
    "--history", "history", default=None, metavar="URL",
    help="History database (SQLAlchemy URL). Env: FARM_HISTORY_URL; default "
         "sqlite:///$FARM_DATA_DIR/history.sqlite (FARM_DATA_DIR: ~/.local/share/agent-farm).",
)


alpha_option = click.option("--alpha", type=float, default=DEFAULT_ALPHA, show_default=True,
                            help="False discovery rate of the regression calls (BH q-value threshold).")
min_drop_option = click.option("--min-drop", type=float, default=DEFAULT_MIN_DROP, show_default=True, metavar="POINTS",
                               help="Smallest pass-rate change, in points, called a regression or improvement.")


def history_flags(command: Any) -> Any:
    """The history flags of ``farm test`` (read back by ``farm.history.session.HistoryOptions.from_flags``)."""
    options = [
        history_option,
        click.option("--no-history", is_flag=True, help="Do not record this sweep in the history."),
        click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE",
                     help="Tag the recorded sweep (repeatable); `farm compare last:KEY=VALUE` finds it."),
        click.option("--baseline", default=None, metavar="REF",
                     help="Compare with REF (a sweep id, last, last:KEY=VALUE, a baseline name or a JSON "
                          "report) and gate on regressions: exit 1 only when a case regressed (see --gate)."),
        click.option("--gate", type=click.Choice(["regressions", "verdicts"]), default=None,
                     help="With --baseline: `regressions` (default: the baseline accepts known failures) or "
                          "`verdicts` (also fail on cases below their pass requirement)."),
        click.option("--pass-k", "pass_k", type=click.IntRange(min=1), multiple=True, metavar="K",
                     help="k of the pass@k and pass^k figures per case (repeatable; default 1 and 5)."),
        click.option("--order", type=click.Choice(["file", "failing-first"]), default=None,
                     help="`failing-first`: run the cases that failed or were flaky most recently first."),
        alpha_option,
        min_drop_option,
    ]
    for option in reversed(options):
        command = option(command)
    return command
