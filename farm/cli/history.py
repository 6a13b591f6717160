"""``farm compare``, ``farm history`` and ``farm baseline``: sweep history on the command line (SPEC 12).

The work is in ``farm.history`` (store, references, trends), ``farm.stats.compare`` and
``farm.reports.comparison``/``history_html``; these print, write files and return exit codes:
``farm compare`` 1 when a case regressed, else 0; 2 on bad input everywhere. Their shared
options and ``farm test``'s history flags: ``farm.cli.history_flags``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from farm.cli.history_flags import alpha_option, history_option, min_drop_option
from farm.cli.run import run_command, warn
from farm.errors import ExitCode, InputError, SettingsError
from farm.wording import plural

if TYPE_CHECKING:
    from farm.history.store import HistoryStore

MAX_SHOWN = 1_000_000
"""``farm history --last`` at most (a larger number would overflow the database's integer)."""


def _open(url: str | None) -> HistoryStore:
    from farm.history.location import history_url
    from farm.history.store import HistoryStore

    # these commands read: a missing file stays missing (unless a sweep waits in its inbox)
    return HistoryStore.open(history_url(url), create=False, tell=warn)


def _check_outputs(outputs: Sequence[str]) -> list[tuple[Path, str]]:
    from farm.reports.comparison_formats import comparison_format

    checked = []
    for output in outputs:
        path = Path(output)
        if not path.parent.is_dir():
            raise SettingsError(f"-o {output}: directory {path.parent} does not exist")
        checked.append((path, comparison_format(path)))
    return checked


# ------------------------------------------------------------------------------------ compare


def compare_sweeps(base: str, head: str, *, history: str | None, outputs: Sequence[str], alpha: float,
                   min_drop: float, show_all: bool) -> int:
    """``farm compare``: resolve both sides, compare, print the table, write ``-o`` files."""
    from farm.history.refs import RefResolver
    from farm.reports.comparison import render_text
    from farm.reports.comparison_formats import render_comparison
    from farm.stats.compare import compare, partial_warnings
    from farm.stats.compare_terms import check_thresholds

    files = _check_outputs(outputs)
    check_thresholds(alpha, min_drop)
    resolver = RefResolver(lambda: _open(history))
    try:
        base_side, head_side = resolver.resolve(base, "BASE"), resolver.resolve(head, "HEAD")
    finally:
        resolver.close()
    comparison = compare(base_side.snapshot, head_side.snapshot, alpha=alpha, min_drop=min_drop)
    for warning in partial_warnings(comparison, base_side.snapshot, head_side.snapshot):
        click.echo(f"farm: warning: {warning}", err=True)
    for path, fmt in files:  # every file before anything is printed: a reader that left stops nothing
        path.write_text(render_comparison(comparison, fmt), encoding="utf-8")
    click.echo(render_text(comparison, show_all), nl=False)
    for path, _ in files:
        click.echo(f"comparison: {path}", err=True)
    return int(ExitCode.CASES_FAILED if comparison.regressed else ExitCode.OK)


@click.command()
@click.argument("base")
@click.argument("head")
@click.option("-o", "--output", "outputs", multiple=True, type=click.Path(dir_okay=False),
              help="Write the comparison: .json (every case's verdict and figures, for scripts), .md (PR "
                   "comment), .html, .txt. Repeatable.")
@history_option
@alpha_option
@min_drop_option
@click.option("--all", "show_all", is_flag=True, help="List unchanged cases too.")
def compare(base: str, head: str, outputs: tuple[str, ...], history: str | None, alpha: float, min_drop: float,
            show_all: bool) -> None:
    """Compare two sweeps case by case: exit 1 when a case regressed.

    BASE and HEAD: a sweep id (or a unique prefix), `last`, `last~N`, `last:KEY=VALUE` (newest
    with that tag), a baseline name, or a JSON report file (no database needed).
    """
    run_command(lambda: compare_sweeps(base, head, history=history, outputs=outputs, alpha=alpha,
                                       min_drop=min_drop, show_all=show_all))


# ------------------------------------------------------------------------------------ history


def show_history(*, history: str | None, case_id: str | None, last: int, tag: str | None, html: str | None,
                 as_json: bool, show_all: bool) -> int:
    """``farm history``: recorded sweeps and each case's pass rate over them."""
    from farm.history.criteria import criteria_moves
    from farm.history.facts import parse_tags
    from farm.history.judge_checks import judge_check_trends
    from farm.history.trends import case_points, trend_document

    if not 1 <= last <= MAX_SHOWN:
        raise SettingsError(f"--last {last}: must be between 1 and {MAX_SHOWN}")
    if html is not None and not Path(html).parent.is_dir():
        raise SettingsError(f"--html {html}: directory {Path(html).parent} does not exist")
    tag_filter = next(iter(parse_tags([tag]).items())) if tag else None
    store = _open(history)
    try:
        window = list(reversed(store.sweeps(last=last, tag=tag_filter)))
        trends = case_points(store.engine, window, case_id) if window else {}
        moves = criteria_moves(store.engine, window, case_id) if window else {}
        judged = judge_check_trends(store.engine, None if case_id is None else [case_id], last)
    finally:
        store.close()
    if case_id is not None and window and not trends:
        raise InputError(f"--case {case_id}: not in the last {plural(len(window), 'sweep')}")
    document = trend_document(window, trends, moves, judged)
    if html is not None:
        from farm.reports.history_html import render_trend_html

        Path(html).write_text(render_trend_html(document), encoding="utf-8")
        click.echo(f"trends: {html}", err=True)
    if as_json:
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        from farm.history.trends import render_trend_text

        click.echo(render_trend_text(window, trends, show_all=show_all or case_id is not None, moves=moves,
                                     judged=judged), nl=False)
    return int(ExitCode.OK)


@click.command(name="history")
@history_option
@click.option("--case", "case_id", default=None, metavar="ID", help="Only this case.")
@click.option("--last", type=int, default=20, show_default=True, metavar="N", help="Sweeps to show.")
@click.option("--tag", default=None, metavar="KEY=VALUE", help="Only sweeps with this tag.")
@click.option("--html", default=None, type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write a self-contained trend page.")
@click.option("--json", "as_json", is_flag=True, help="Print the trend data as JSON.")
@click.option("--all", "show_all", is_flag=True, help="List cases that stayed stable too.")
def history_command(history: str | None, case_id: str | None, last: int, tag: str | None, html: str | None,
                    as_json: bool, show_all: bool) -> None:
    """Recorded sweeps with their pass rates, and each case's trend (sparkline, class changes)."""
    run_command(lambda: show_history(history=history, case_id=case_id, last=last, tag=tag, html=html,
                                     as_json=as_json, show_all=show_all))


# ------------------------------------------------------------------------------------ baseline


@click.group()
def baseline() -> None:
    """Bless sweeps as named baselines (farm compare NAME last, farm test --baseline NAME)."""


def set_baseline(name: str, ref: str, history: str | None) -> int:
    from farm.history.refs import RefResolver, is_report_path

    if not name.strip():
        raise InputError("baseline name is empty: give it a name, e.g. farm baseline set main last")
    if is_report_path(ref):
        raise InputError(f"baseline {name}: {ref} is a file; a baseline names a recorded sweep")
    resolver = RefResolver(lambda: _open(history))
    try:
        info = resolver.find(ref)
        if info is None:
            raise InputError(f"baseline {name}: no recorded sweep {ref!r}")
        resolver.store.set_baseline(name, info.sweep_id)
    finally:
        resolver.close()
    click.echo(f"baseline {name}: {info.sweep_id} ({info.started_at:%Y-%m-%d %H:%M}Z, "
               f"pass rate {info.overall_pass_rate:g}%)")
    return int(ExitCode.OK)


@baseline.command(name="set")
@click.argument("name")
@click.argument("sweep")
@history_option
def baseline_set(name: str, sweep: str, history: str | None) -> None:
    """Bless SWEEP (an id, a prefix, last, last:KEY=VALUE) as baseline NAME."""
    run_command(lambda: set_baseline(name, sweep, history))


def list_baselines(history: str | None) -> int:
    store = _open(history)
    try:
        found = store.baselines()
    finally:
        store.close()
    for b in found:
        click.echo(f"{b.name}  {b.sweep.sweep_id}  started {b.sweep.started_at:%Y-%m-%d %H:%M}Z  "
                   f"pass rate {b.sweep.overall_pass_rate:g}%  set {b.set_at:%Y-%m-%d %H:%M}Z")
    if not found:
        click.echo("no baselines (farm baseline set NAME SWEEP)")
    return int(ExitCode.OK)


@baseline.command(name="list")
@history_option
def baseline_list(history: str | None) -> None:
    """List the baselines."""
    run_command(lambda: list_baselines(history))


def remove_baseline(name: str, history: str | None) -> int:
    store = _open(history)
    try:
        if not store.remove_baseline(name):
            raise InputError(f"baseline {name}: no such baseline")
    finally:
        store.close()
    click.echo(f"baseline {name}: removed")
    return int(ExitCode.OK)


@baseline.command(name="rm")
@click.argument("name")
@history_option
def baseline_rm(name: str, history: str | None) -> None:
    """Remove baseline NAME (the sweep stays recorded)."""
    run_command(lambda: remove_baseline(name, history))


__all__ = [
    "baseline",
    "compare",
    "compare_sweeps",
    "history_command",
    "show_history",
]
