"""The flags of Yao's ``agent eval`` that ``farm test`` takes; ``farm.cli.extras`` runs what they ask for."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["yao_flags"]


def yao_flags(command: Any) -> Any:
    """The flags of Yao's ``agent eval`` that ``farm test`` takes (``TestSettings`` fields)."""
    options = [
        click.option("--run", "run_pattern", default=None, metavar="REGEX",
                     help="Run only cases whose id the regular expression matches (Yao's --run)."),
        click.option("--ctx", default=None, metavar="FILE",
                     help="Yao context file (JSON: chat_id, authorized, metadata, client, locale, referer) "
                          "for every call."),
        click.option("--collect-only", is_flag=True,
                     help="Load, validate and resolve everything, print the case ids (one a line) and their "
                          "count; call no agent (pytest's --co)."),
        click.option("--dry-run", is_flag=True,
                     help="As --collect-only, but print each case as a JSON line (id, source, agent, runs, …)."),
        click.option("--simulator", default=None, metavar="AGENT",
                     help="Simulator of every dynamic case: an agent reference, or llm:CONNECTOR for the "
                          "built-in one."),
        click.option("--before", default=None, metavar="module:function",
                     help="Python callable run once before the sweep: before(context, cases) (Yao's BeforeAll)."),
        click.option("--after", default=None, metavar="module:function",
                     help="Python callable run once after the sweep: after(context, report, before_data) "
                          "(Yao's AfterAll)."),
        click.option("--yao-compat", is_flag=True,
                     help="Dynamic cases as Yao's code runs them where its documentation disagrees "
                          "(see the README)."),
        click.option("--allow-remote-includes", is_flag=True,
                     help="Let a HOCON suite's include url(...) fetch its URL while the suite loads "
                          "(refused by default: exit 2 naming the file)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command
