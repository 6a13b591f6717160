"""``farm judge-check REPORT``: ask a sweep's judges again about the outputs they judged (SPEC 23)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from farm.agents.secrets import redact
from farm.cli.history_flags import history_option
from farm.cli.options import StrictCommand
from farm.cli.run import run_command, warn
from farm.errors import ExitCode, FarmError, SettingsError
from farm.reports.outputs import write_document

if TYPE_CHECKING:
    from farm.judgecheck import JudgeCheck

EXAMPLES = """
\b
Examples:
  farm judge-check report.json
  farm judge-check report.json --repeats 7 --sample 30 --judge openai.gpt-4o -o trust.json
  farm judge-check 20261128T002817-b63957 --labels labels.jsonl -o trust.md

A JSON report holds 100 runs' details a case; a sweep's journal ($FARM_DATA_DIR/journals, by path
or sweep id) holds every run. The history keeps no outputs.

Every distinct output of a judged check (gist, not_gist, agent) is judged --repeats times again,
past the judge cache: each is a paid judge call. Per criterion: judge_flip_rate (share of outputs
whose verdicts disagree) with its 95% interval, judge_noisy when the interval lies above 5%; per
case the share of failures the judge alone explains (failed once, passed by the majority).

Each check is recorded in the history (--history, FARM_HISTORY_URL; --no-history: not), so
`farm history` shows a criterion's judge_flip_rate over the checks and the scorecard of later
sweeps marks its judge-noisy criteria.

Exit codes: 0 once judged, whatever the judge did; 2 bad input; 3 the judge failed every call.
"""
_FORMATS = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html",
            ".txt": "text"}


def _targets(outputs: tuple[str, ...]) -> list[tuple[Path, str]]:
    chosen = []
    for name in outputs:
        path = Path(name)
        fmt = _FORMATS.get(path.suffix.lower())
        if fmt is None:
            raise SettingsError(f"-o {name}: cannot tell the format (supported: {', '.join(_FORMATS)})")
        if not path.absolute().parent.is_dir():
            raise SettingsError(f"-o {name}: directory {path.absolute().parent} does not exist")
        chosen.append((path, fmt))
    return chosen


def run_judge_check(source: str, outputs: tuple[str, ...], repeats: int, sample: int | None, judge: str | None,
                    seed: int, labels: str | None = None, estimate: bool = False, history: str | None = None,
                    record: bool = True) -> int:
    from farm.judgecheck import (
        JudgeCheckSettings,
        judge_check,
        render_judge_check_html,
        render_judge_check_json,
        render_judge_check_markdown,
        render_judge_check_text,
    )

    targets = _targets(outputs)  # checked before any judge is asked
    found = judge_check(JudgeCheckSettings(source=source, cwd=str(Path.cwd()), repeats=repeats, sample=sample,
                                           judge=judge, seed=seed, labels=labels, estimate=estimate))
    if found.estimate is not None:
        click.echo(redact(f"judge-check estimate: {found.estimate}"))
        return int(ExitCode.OK)
    click.echo(redact(render_judge_check_text(found)), nl=False)  # a judge's error may quote a secret
    renderers = {"json": render_judge_check_json, "markdown": render_judge_check_markdown,
                 "html": render_judge_check_html, "text": render_judge_check_text}
    for path, fmt in targets:
        write_document(path, renderers[fmt](found))  # masked, as every report the farm writes
    if record:
        record_in_history(found, history)
    return int(ExitCode.OK)


def record_in_history(found: JudgeCheck, history: str | None) -> bool:
    """Record the check (a history that cannot be written is a warning: the findings are printed)."""
    from farm.history.engine import error_reason, safe_url
    from farm.history.judge_checks import record_judge_check
    from farm.history.location import history_url
    from farm.history.store import HistoryStore

    url = history_url(history)
    try:
        store = HistoryStore.open(url, tell=warn)
    except FarmError as exc:
        click.echo(f"farm: warning: judge check not recorded in the history: {exc.message}", err=True)
        return False
    try:
        rows = record_judge_check(store.engine, found)
    except Exception as exc:  # the findings are out already; the history only keeps them
        click.echo(f"farm: warning: judge check not recorded in {safe_url(url)}: {error_reason(exc)}", err=True)
        return False
    finally:
        store.close()
    click.echo(f"farm: judge check recorded in the history {safe_url(url)} ({rows} criteria)", err=True)
    return True


@click.command(cls=StrictCommand, epilog=EXAMPLES)
@click.argument("source", metavar="REPORT|JOURNAL|SWEEP_ID")
@click.option("--repeats", type=click.IntRange(min=2), default=5, show_default=True, metavar="K",
              help="Verdicts asked of the judge per output.")
@click.option("--sample", type=click.IntRange(min=1), default=None, metavar="N",
              help="At most N outputs per criterion (a seeded sample) when there are more.")
@click.option("--judge", default=None, metavar="CONNECTOR",
              help="Judge every check with this connector (or agents:<agent id>) instead of the report's judges.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --sample's choice.")
@click.option("--labels", default=None, metavar="FILE.jsonl",
              help='Human verdicts, one a line: {"case", "run" or "output", "criterion", "human": "pass"|"fail"}; '
                   "per criterion the judge's TPR and TNR, and the pass rate corrected for its errors.")
@click.option("--estimate", is_flag=True,
              help="Say the judge calls and their cost (at the sweep's judge cost per output) and ask nothing.")
@click.option("-o", "--output", "outputs", multiple=True, metavar="FILE",
              help="Also write the findings: .json, .md, .html, .txt. Repeatable.")
@history_option
@click.option("--no-history", is_flag=True, help="Do not record this check in the history.")
def judge_check(source: str, outputs: tuple[str, ...], repeats: int, sample: int | None, judge: str | None,
                seed: int, labels: str | None, estimate: bool, history: str | None, no_history: bool) -> None:
    """Ask a sweep's judges again about the outputs they judged: per criterion the judge's flip rate."""
    run_command(lambda: run_judge_check(source, outputs, repeats, sample, judge, seed, labels, estimate,
                                        history, not no_history))


__all__ = ["judge_check", "run_judge_check"]
