"""``farm assess SUITE_OR_REPORT``: name the failure modes of a sweep (neuro-san's Assessor, SPEC 14.3)."""

from __future__ import annotations

from pathlib import Path

import click

from farm.assess import InMemoryModes, JsonFileModes, default_modes_path
from farm.assess.html import render_assessment_html
from farm.assess.render import render_assessment_json, render_assessment_markdown, render_assessment_text
from farm.assess.run import AssessSettings, assess_failures
from farm.cli.run import run_command
from farm.errors import ExitCode, SettingsError

EXAMPLES = """
\b
Examples:
  farm assess report.json
  farm assess tests/fixtures/music_nerd.hocon --judge openai.gpt-4o -o modes.json -o modes.html
  farm assess suite.jsonl -n py:agent.py:respond --runs 20 --judge local.judge
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


def run_assess(settings: AssessSettings, outputs: tuple[str, ...], modes_file: str | None, memory: bool) -> int:
    """The command body: returns the exit code (0: assessed, whatever the failures)."""
    targets = _outputs(outputs, settings.cwd)  # checked before anything runs
    store = JsonFileModes(Path(modes_file) if modes_file else default_modes_path()) if memory else InMemoryModes()
    assessment = assess_failures(settings, store)
    click.echo(render_assessment_text(assessment), nl=False)
    for path, fmt in targets:
        path.write_text(_RENDERERS[fmt](assessment), encoding="utf-8")
    return int(ExitCode.OK)


@click.command(epilog=EXAMPLES)
@click.argument("source", metavar="SUITE_OR_REPORT")
@click.option("--judge", default=None, metavar="CONNECTOR",
              help="Names the failure modes (a connector id, or agents:<agent id>), at temperature 0; also judges "
                   "gist checks when a sweep is run. Without it the modes are the failure classes.")
@click.option("-o", "--output", "outputs", multiple=True, metavar="FILE",
              help="Also write the assessment: .json (SPEC 14.3), .md, .html, .txt. Repeatable.")
@click.option("-n", "--name", default=None, metavar="AGENT", help="Agent under test when a suite is run.")
@click.option("--runs", type=int, default=None, help="Runs per case when a suite is run (default: success_ratio's n).")
@click.option("--server", envvar="FARM_NEURO_SAN_URL", default=None, metavar="URL",
              help="neuro-san server for http/https connections.")
@click.option("-c", "--connector", default=None, help="Override the connector of prompt agents.")
@click.option("--modes", "modes_file", default=None, metavar="FILE",
              help="Where known failure modes are remembered per case (default $FARM_DATA_DIR/assess-modes.json).")
@click.option("--no-memory", is_flag=True, help="Remember nothing: every mode counts as new.")
def assess(source: str, outputs: tuple[str, ...], modes_file: str | None, no_memory: bool, **flags: object) -> None:
    """Group a sweep's failures into failure modes: from a JSON report, or by running the suite."""
    settings = AssessSettings(source=source, cwd=str(Path.cwd()), **flags)  # type: ignore[arg-type]
    run_command(lambda: run_assess(settings, outputs, modes_file, not no_memory))


__all__ = ["assess", "run_assess"]
