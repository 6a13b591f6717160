"""``farm assess SUITE_OR_REPORT``: name the failure modes of a sweep (neuro-san's Assessor, SPEC 14.3).

Known modes are remembered per case in the history store (``--history``, ``FARM_HISTORY_URL``,
the default SQLite file), as ``farm test`` records its sweeps; with ``--no-history``, or
``--modes FILE``, in a JSON file instead; with ``--no-memory``, nowhere.
"""

from __future__ import annotations

from pathlib import Path

import click

from farm.assess import InMemoryModes, JsonFileModes, ModeMemory, default_modes_path
from farm.assess.html import render_assessment_html
from farm.assess.render import render_assessment_json, render_assessment_markdown, render_assessment_text
from farm.assess.run import AssessSettings, assess_failures
from farm.cli.history_flags import history_option
from farm.cli.options import StrictCommand
from farm.cli.run import run_command
from farm.errors import ExitCode, SettingsError

EXAMPLES = """
\b
Examples:
  farm assess report.json
  farm assess tests/fixtures/music_nerd.hocon --judge openai.gpt-4o -o modes.json -o modes.html
  farm assess suite.jsonl -n py:agent.py:respond --runs 20 --judge local.judge

Exit codes: 0 once the failures are assessed, whatever they are (an assessment is no
verdict: gate on farm test's exit code); 2 bad input; 3 the farm or the judge failed.
"""
_FORMATS = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html",
            ".txt": "text"}


def _outputs(outputs: tuple[str, ...], cwd: str) -> list[tuple[Path, str]]:
    chosen = []
    for name in outputs:
        path = Path(name) if Path(name).is_absolute() else Path(cwd) / name
        fmt = _FORMATS.get(path.suffix.lower())
        if fmt is None:
            raise SettingsError(f"-o {name}: cannot tell the format (supported: {', '.join(_FORMATS)})")
        if not path.parent.is_dir():
            raise SettingsError(f"-o {name}: directory {path.parent} does not exist")
        chosen.append((path, fmt))
    return chosen


_RENDERERS = {"json": render_assessment_json, "markdown": render_assessment_markdown, "html": render_assessment_html,
              "text": render_assessment_text}


def open_memory(*, memory: bool, modes_file: str | None, history: str | None, use_history: bool) -> ModeMemory:
    """Where known modes live: nowhere (``--no-memory``), ``--modes FILE``, the history store, or
    (``--no-history``) the JSON file in the data directory."""
    if not memory:
        return InMemoryModes()
    if modes_file:
        return JsonFileModes(Path(modes_file))
    if not use_history:
        return JsonFileModes(default_modes_path())
    from farm.history.location import history_url
    from farm.history.modes import HistoryModes

    return HistoryModes.open(history_url(history))


def run_assess(settings: AssessSettings, outputs: tuple[str, ...], memory: ModeMemory) -> int:
    """The command body: returns the exit code (0: assessed, whatever the failures)."""
    targets = _outputs(outputs, settings.cwd)  # checked before anything runs
    try:
        assessment = assess_failures(settings, memory)
    finally:
        memory.close()
    click.echo(render_assessment_text(assessment), nl=False)
    for path, fmt in targets:
        path.write_text(_RENDERERS[fmt](assessment), encoding="utf-8")
    return int(ExitCode.OK)


@click.command(cls=StrictCommand, epilog=EXAMPLES)
@click.argument("source", metavar="SUITE_OR_REPORT")
@click.option("--judge", default=None, metavar="CONNECTOR",
              help="Names the failure modes (a connector id, or agents:<agent id>), at temperature 0; also judges "
                   "gist checks when a sweep is run. Without it the modes are the failure classes.")
@click.option("-o", "--output", "outputs", multiple=True, metavar="FILE",
              help="Also write the assessment: .json (each case's failure modes with counts and examples), .md, "
                   ".html, .txt. Repeatable.")
@click.option("-n", "--name", default=None, metavar="AGENT", help="Agent under test when a suite is run.")
@click.option("--runs", type=int, default=None, help="Runs per case when a suite is run (default: success_ratio's n).")
@click.option("--server", envvar="FARM_NEURO_SAN_URL", default=None, metavar="URL",
              help="neuro-san server for http/https connections.")
@click.option("-c", "--connector", default=None, help="Override the connector of prompt agents.")
@history_option
@click.option("--no-history", is_flag=True,
              help="Remember modes in $FARM_DATA_DIR/assess-modes.json instead of the history database.")
@click.option("--modes", "modes_file", default=None, metavar="FILE",
              help="Remember modes in this JSON file instead of the history database.")
@click.option("--no-memory", is_flag=True, help="Remember nothing: every mode counts as new.")
def assess(source: str, outputs: tuple[str, ...], history: str | None, no_history: bool, modes_file: str | None,
           no_memory: bool, **flags: object) -> None:
    """Group a sweep's failures into failure modes: from a JSON report, or by running the suite."""
    settings = AssessSettings(source=source, cwd=str(Path.cwd()), **flags)  # type: ignore[arg-type]
    run_command(lambda: run_assess(settings, outputs, open_memory(
        memory=not no_memory, modes_file=modes_file, history=history, use_history=not no_history)))


__all__ = ["assess", "open_memory", "run_assess"]
