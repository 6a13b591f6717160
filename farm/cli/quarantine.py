"""``farm quarantine suggest|review``: the history's evidence for the quarantine list (SPEC 18).

``suggest`` lists the cases flaky over the last K recorded sweeps (``farm.history.quarantine_evidence``);
``review`` lists the entries of a quarantine file that can go: recovered, expired, or naming no
case. Both exit 0 (they advise); bad input exits 2.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import click

from farm.cli.history_flags import history_option
from farm.cli.run import run_command, warn
from farm.errors import ExitCode, InputError, SettingsError
from farm.models.quarantine import today_utc
from farm.quarantine.files import FILE_NAME

DEFAULT_SUGGEST_LAST = 10
DEFAULT_REVIEW_LAST = 5


def _evidence(history: str | None, last: int, tag: str | None) -> tuple[int, dict[str, Any]]:
    """(sweeps in the window, evidence by case); a read: a missing SQLite history is empty, not created."""
    from farm.history.engine import missing_sqlite_file
    from farm.history.facts import parse_tags
    from farm.history.location import history_url
    from farm.history.quarantine_evidence import gather
    from farm.history.store import HistoryStore

    if last < 1:
        raise SettingsError(f"--last {last}: must be at least 1")
    tag_filter = next(iter(parse_tags([tag]).items())) if tag else None
    url = history_url(history)
    if missing_sqlite_file(url):
        return 0, {}
    store = HistoryStore.open(url, tell=warn)
    try:
        window = list(reversed(store.sweeps(last=last, tag=tag_filter)))
        return len(window), gather(store.engine, window) if window else {}
    finally:
        store.close()


def _figures(e: Any) -> str:
    return (f"{e.passed}/{e.runs} runs passed ({e.pass_rate:g}%, 95% CI {e.ci_low:g}-{e.ci_high:g}%) "
            f"over {e.sweeps} sweeps, flaky in {e.flaky_sweeps}; needs {e.requirement:g}%")


SUGGESTED_DAYS = 14
"""``until`` of a suggested entry: a quarantine is a fortnight's grace, not a home."""


def run_suggest(history: str | None, last: int, tag: str | None, as_json: bool) -> int:
    from farm.history.quarantine_evidence import suggest

    sweeps, evidence = _evidence(history, last, tag)
    found = suggest(evidence)
    if as_json:
        click.echo(json.dumps({"sweeps": sweeps, "suggested": [e.to_json() for e in found]}, indent=2))
        return int(ExitCode.OK)
    click.echo(f"{len(found)} cases flaky over the last {sweeps} sweeps" + (":" if found else ""))
    for e in found:
        click.echo(f"  {e.case_id}: {_figures(e)}")
    if found:
        click.echo(f"\n# ready to paste into {FILE_NAME} (set each owner; until: {SUGGESTED_DAYS} days from today)")
        click.echo(_toml(found, today_utc() + dt.timedelta(days=SUGGESTED_DAYS)))
    return int(ExitCode.OK)


def _toml(found: list[Any], until: dt.date) -> str:
    """``[[quarantine]]`` entries matching exactly these cases (a glob naming one id: ``case`` is
    matched as ``-k`` is, a substring otherwise); strings in TOML's basic form (JSON's escapes)."""
    from farm.plan.batch import exact_pattern

    return "\n".join(f"[[quarantine]]\ncase = {json.dumps(exact_pattern(e.case_id))}\n"
                     f"owner = \"set-me\"\nreason = {json.dumps('flaky: ' + _figures(e))}\n"
                     f"until = {until.isoformat()}\n" for e in found)


def _entries(path: str | None, quarantine_file: str | None) -> list[Any]:
    from farm.quarantine.entries import read_entries
    from farm.quarantine.files import project_file

    if quarantine_file:
        return read_entries(Path(quarantine_file))
    found = project_file(Path(path or ".").resolve())
    if not found.is_file():
        raise InputError(f"{found}: no quarantine file (give --quarantine FILE)")
    return read_entries(found)


def run_review(path: str | None, quarantine_file: str | None, history: str | None, last: int, tag: str | None,
               as_json: bool) -> int:
    from farm.history.quarantine_evidence import every_case_quarantined, review
    from farm.models.quarantine import EVERY_CASE
    from farm.quarantine.entries import EntryIndex

    index = EntryIndex(_entries(path, quarantine_file))
    entries, today = index.entries, today_utc()
    sweeps, evidence = _evidence(history, last, tag)
    found = review(index, evidence, today)
    everything = every_case_quarantined(index, evidence, today)
    if as_json:
        click.echo(json.dumps({"sweeps": sweeps, "entries": len(entries), "every_case_quarantined": everything,
                               "review": [r.to_json() for r in found]}, indent=2))
        return int(ExitCode.OK)
    if everything:
        click.echo(EVERY_CASE)
    click.echo(f"{len(found)} of {len(entries)} entries can go (last {sweeps} sweeps)" + (":" if found else ""))
    for r in found:
        e = r.entry
        click.echo(f"  {e.file}:{e.line} case {e.case!r} ({e.owner}, until {e.until}): {', '.join(r.findings)}")
        for c in r.cases:
            click.echo(f"    {c.case_id}: {_figures(c)}")
    return int(ExitCode.OK)


@click.group()
def quarantine() -> None:
    """Which cases to quarantine, and which entries of farm-quarantine.toml can go (from the history)."""


tag_option = click.option("--tag", default=None, metavar="KEY=VALUE", help="Only sweeps with this tag.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


@quarantine.command(name="suggest")
@history_option
@click.option("--last", type=int, default=DEFAULT_SUGGEST_LAST, show_default=True, metavar="K",
              help="Recorded sweeps to pool.")
@tag_option
@json_option
def suggest_command(history: str | None, last: int, tag: str | None, as_json: bool) -> None:
    """Cases flaky over the last K sweeps: flaky in one at least, and their pooled interval straddles the
    requirement."""
    run_command(lambda: run_suggest(history, last, tag, as_json))


@quarantine.command(name="review")
@click.argument("path", required=False, metavar="[PATH]")
@click.option("--quarantine", "quarantine_file", default=None, type=click.Path(dir_okay=False), metavar="FILE",
              help="The quarantine file (default: the farm-quarantine.toml of PATH's project, PATH default .).")
@history_option
@click.option("--last", type=int, default=DEFAULT_REVIEW_LAST, show_default=True, metavar="N",
              help="Recorded sweeps to pool.")
@tag_option
@json_option
def review_command(path: str | None, quarantine_file: str | None, history: str | None, last: int, tag: str | None,
                   as_json: bool) -> None:
    """Entries that can go: their cases recovered (the pooled interval over the last N sweeps clears the
    requirement), expired, or naming no recorded case."""
    run_command(lambda: run_review(path, quarantine_file, history, last, tag, as_json))


__all__ = ["quarantine"]
