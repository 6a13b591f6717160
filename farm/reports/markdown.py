"""The Markdown report, in the Yao layout: summary, environment, stability, a section per case.

Agent-produced strings cannot break the document: inline text is backslash-escaped (pipes
included, so tables hold) and flattened to one line; blocks go in a code fence longer than any
backtick run they contain.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from typing import Any, TextIO

from farm.durations import format_ms
from farm.models import CaseStats, FailureClassStats, RunDetail, RunStatus, SweepReport
from farm.models.quarantine import badge
from farm.reports.criteria import CRITERIA_HEADER, criterion_row, failing_text
from farm.reports.details import RunDetailsSource, with_details
from farm.reports.failed_runs import failed_run, failing_runs
from farm.reports.failures import checkpoint_row, example_text
from farm.reports.fleet import BIASED, BIASED_NOTE, adaptive_text, cost_rows, stopped_early, sweep_rows
from farm.reports.load import RAMP_HEADER, case_load_text, ramp_rows
from farm.reports.semantic import cluster_rows, semantic_case_text, semantic_summary
from farm.reports.trajectory import TRAJECTORY_HEADER, divergence_text, path_text, trajectory_rows
from farm.stats import case_verdict
from farm.wording import plural

MAX_DETAILS_SHOWN = 10
"""Failing runs described per case; the rest are counted."""

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SPECIAL = re.compile(r"([\\`*_\[\]<>#!|~&])")
"""Characters that can start Markdown syntax mid-line (emphasis, code, links, HTML, entities,
cells, closing heading hashes, strike-through); line-start syntax cannot occur after flattening."""
_ICONS = {"passed": "✅", "failed": "❌", "skipped": "⏭️"}
_ENV_LABELS = {"user_id": "User", "team_id": "Team", "locale": "Locale", "client_type": "Client Type",
               "client_ip": "Client IP", "referer": "Referer", "accept": "Accept"}


def md_inline(value: Any) -> str:
    """One line of Markdown-safe text (safe inside a table cell or a heading)."""
    text = value if isinstance(value, str) else _as_text(value, indent=None)
    text = " ".join(_CONTROL.sub("", text).split())
    return _SPECIAL.sub(r"\\\1", text)


def md_fence(text: str, info: str = "") -> str:
    """``text`` in a code fence that no backtick run inside it can close."""
    text = _CONTROL.sub("", text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _as_text(value: Any, indent: int | None = 2) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=indent, ensure_ascii=False, default=str)


def _block(value: Any) -> str:
    return md_fence(_as_text(value), "" if isinstance(value, str) else "json")


def _table(header: tuple[str, ...], rows: Sequence[Sequence[str]], align: str = "") -> list[str]:
    marks = [(":" if a == "r" else "") for a in align.ljust(len(header))]
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join("---" + m for m in marks) + " |"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _summary(report: SweepReport) -> list[str]:
    s, meta = report.summary, report.envelope
    rows = [("Agent", md_inline(meta.agent_id or "-")),
            ("Connector", md_inline(meta.connector or "-")),
            ("Total", str(s.total_cases)), ("Passed", str(s.passed_cases)),
            ("Failed", str(s.failed_cases)), ("Skipped", str(s.skipped_cases)),
            ("Pass Rate", f"{s.overall_pass_rate}%"), ("Duration", format_ms(s.duration_ms)),
            ("Runs per Case", str(s.runs_per_case)), ("Total Runs", str(s.total_runs))]
    if s.runs_per_case > 1:
        rows += [("Stable", str(s.stable_cases)), ("Flaky", str(s.flaky_cases)),
                 ("Broken", str(s.broken_cases))]
    for value, label in ((meta.comparison, "Comparison"), (meta.min_pass_rate, "Min Pass Rate"),
                         (meta.sweep_id, "Sweep")):
        if value is not None:
            rows.append((label, md_inline(value)))
    rows += [(label, md_inline(value)) for label, value in sweep_rows(s, meta, report.outcome.budget)]
    if (bias := meta.retry_bias) is not None:
        rows.append(("Retry Bias", md_inline(bias.line)))
    if semantic_summary(s) is not None:
        rows.append(("Semantic consistency", md_inline(semantic_summary(s))))
    if s.served is not None:  # SPEC 25: what the provider says served the runs
        rows.append(("Served", md_inline(s.served.text())))
    if s.load_bias is not None:  # SPEC 25: runs started above the median in_flight against the rest
        rows.append(("Load Bias", md_inline(s.load_bias.line)))
    return ["## Summary", "", *_table(("Metric", "Value"), rows)]


def _ramp(report: SweepReport) -> list[str]:
    """``farm test --ramp``'s levels (SPEC 25)."""
    ramp = report.summary.ramp
    if ramp is None:
        return []
    return ["## Ramp", "", md_inline(ramp.line), "", *_table(RAMP_HEADER, ramp_rows(ramp), "rrrrrrrr")]


def _environment(report: SweepReport) -> list[str]:
    rows = [(md_inline(_ENV_LABELS.get(k, k)), md_inline(v)) for k, v in report.environment.items()]
    if not rows:
        return []
    return ["## Environment", "", *_table(("Setting", "Value"), rows)]


def _stability(report: SweepReport) -> list[str]:
    if report.summary.runs_per_case <= 1:
        return []
    rows = [(md_inline(s.id), f"{s.runs}/{s.runs_planned}" if s.runs_planned not in (None, s.runs) else str(s.runs),
             f"{s.pass_rate}%" + ("\\*" if stopped_early(s) else ""),
             f"{s.pass_rate_ci[0]}–{s.pass_rate_ci[1]}%", f"{s.consistency:.3f}",
             s.stability_class.value.replace("_", " "), s.label) for s in report.results]
    header = ("Case", "Runs", "Pass Rate", "95% CI", "Consistency", "Class", "Label")
    note = ["", f"\\* {md_inline(BIASED_NOTE)}"] if any(stopped_early(s) for s in report.results) else []
    return ["## Stability", "", *_table(header, rows, "lrrrr"), *note]


def _failure_classes(classes: dict[str, FailureClassStats], *, with_case: bool) -> list[str]:
    rows = [(md_inline(name), str(entry.count), md_inline(example_text(entry.example, with_case=with_case)))
            for name, entry in classes.items()]
    return _table(("Failure class", "Runs", "Example"), rows, "lr")


def _sweep_failures(report: SweepReport) -> list[str]:
    if not report.summary.failure_classes:
        return []
    return ["## Failure classes", "", *_failure_classes(report.summary.failure_classes, with_case=True)]


def _checkpoints(stats: CaseStats) -> list[str]:
    if not stats.checkpoints:
        return []
    header = ("Checkpoint", "Required", "Reached", "Reach rate", "95% CI", "Avg turn", "First unmet")
    rows = [tuple(md_inline(cell) for cell in checkpoint_row(point)) for point in stats.checkpoints]
    return ["**Checkpoints**", "", *_table(header, rows, "llrrrrr"), ""]


def _criteria(stats: CaseStats) -> list[str]:
    if not stats.criteria:
        return []
    rows = [tuple(md_inline(cell) for cell in criterion_row(c)) for c in stats.criteria]
    failing = failing_text(stats)
    return ["**Criteria**", "", *([md_inline(failing), ""] if failing else []),
            *_table(CRITERIA_HEADER, rows, "lllrrr"), ""]
def _trajectories(stats: CaseStats) -> list[str]:
    if stats.trajectory_consistency is None:
        return []
    rows = [tuple(md_inline(cell) for cell in row) for row in trajectory_rows(stats)]
    lines = [f"**Trajectories**: {plural(len(stats.trajectories), 'distinct path')}", "",
             *_table(TRAJECTORY_HEADER, rows, "lrrr"), "", f"Trajectory consistency: {stats.trajectory_consistency}"]
    divergence = divergence_text(stats)
    return [*lines, *([f"Divergence: {md_inline(divergence)}"] if divergence else []), ""]


def _meanings(stats: CaseStats) -> list[str]:
    text = semantic_case_text(stats)
    if text is None:
        return []
    rows = [(runs, share, md_inline(example)) for runs, share, example in cluster_rows(stats)]
    return [f"**Meanings**: {md_inline(text)}", "", *_table(("Runs", "Share", "Example"), rows, "rr"), ""]


def _run_lines(detail: RunDetail) -> list[str]:
    run = failed_run(detail)
    head = f"Run {run.head}"
    if detail.failure_class:
        turn = f", turn {detail.failed_turn}" if detail.failed_turn else ""
        head += f" · {md_inline(detail.failure_class)}{turn}"
    if detail.trajectory:
        head += f" · path {md_inline(path_text([c.name for c in detail.trajectory]))}"
    if run.error is not None:
        return [f"- {head}: {md_inline(run.error)}"]
    lines = [f"- {head}"]
    for check in run.checks:
        line = f"  - **{md_inline(check.name)}**: {md_inline(check.message)}"
        if check.shows_values:
            line += f" (expected: {md_inline(check.expected)}"
            line += f", actual: {md_inline(check.actual)})"
        lines.append(line)
    return lines


def _failures(stats: CaseStats) -> list[str]:
    failing = failing_runs(stats)
    if not failing:
        return []
    lines = ["**Failures**", ""]
    for detail in failing[:MAX_DETAILS_SHOWN]:
        lines += _run_lines(detail)
    hidden = stats.failed - min(len(failing), MAX_DETAILS_SHOWN)
    if hidden > 0:
        lines.append(f"- … and {hidden} more failing runs")
    return [*lines, ""]


def _matrix(report: SweepReport) -> list[str]:
    """A matrix sweep's table, the arms as columns, and its fronts (SPEC 22)."""
    if report.matrix is None:
        return []
    from farm.matrix.text import front_lines, matrix_rows

    header, rows = matrix_rows(report)
    cells = [[md_inline(text) for text in row] for row in rows]
    return ["## Matrix", "", *_table(tuple(md_inline(h) for h in header), cells), "",
            *(f"- {md_inline(line)}" for line in front_lines(report))]


def _case(stats: CaseStats) -> list[str]:
    verdict = case_verdict(stats)
    timing = "" if verdict == "skipped" else f" ({format_ms(stats.avg_duration_ms)})"
    arm = f" [{md_inline(stats.arm)}]" if stats.arm else ""
    lines = [f"### {_ICONS[verdict]} {md_inline(stats.id)}{arm} - {verdict.capitalize()}{timing}", ""]
    if verdict == "skipped":
        lines += ["Skipped: no run was executed.", ""]
    elif stats.runs > 1 or stats.required_passes != stats.runs:
        lines += [f"Runs: {stats.passed}/{stats.runs - stats.skipped} passed ({stats.pass_rate}%), "
                  f"{stats.required_passes} required; {stats.label}, consistency {stats.consistency:.3f}", ""]
    if (quarantine := badge(stats)) is not None:
        lines += [f"**{md_inline(quarantine)}**", ""]
    adaptive = adaptive_text(stats)
    if adaptive is not None:
        lines += [f"Adaptive: {md_inline(adaptive)} of {stats.runs_planned} planned ({BIASED})", ""]
    if verdict != "skipped":
        lines += ["; ".join(f"{label}: {md_inline(value)}" for label, value in cost_rows(stats)), ""]
    if stats.served is not None:
        lines += [f"Served: {md_inline(stats.served.text())}", ""]
    if (load := case_load_text(stats)) is not None:
        lines += [f"Load: {md_inline(load)}", ""]
    if stats.input is not None:
        lines += ["**Input**", "", _block(stats.input), ""]
    if stats.expected is not None:
        lines += ["**Expected**", "", _block(stats.expected), ""]
    shown = next((d for d in stats.run_details if d.status is not RunStatus.SKIPPED), None)
    if shown is not None and shown.output is not None:
        lines += [f"**Output** (run {shown.run})", "", _block(shown.output), ""]
    lines += _checkpoints(stats) + _criteria(stats) + _trajectories(stats) + _meanings(stats)
    if stats.failure_classes:
        lines += ["**Failure classes**", "", *_failure_classes(stats.failure_classes, with_case=False), ""]
    return lines + _failures(stats)


def _apart(report: SweepReport) -> list[str]:
    """Cases with no result section: skipped by the suite, not run by a stopped sweep."""
    lines: list[str] = []
    not_run = report.outcome.not_run
    groups = [("Skipped", report.summary.skipped_ids, "skipped by the suite")]
    if not_run is not None:
        groups.append(("Not run", not_run, f"the sweep stopped ({md_inline(report.outcome.stopped)})"))
    for title, ids, why in groups:
        if ids:
            count = plural(len(ids), "case")
            lines += ["", f"## {title}", "", f"{count}, {why}:", "", *(f"- {md_inline(i)}" for i in ids)]
    return lines[1:]


def write_markdown(report: SweepReport, out: TextIO, details: RunDetailsSource | None = None) -> None:
    """The whole report as Markdown, written to ``out`` one case at a time (each case's run
    details from ``details`` when given)."""
    head = [["# Agent Test Report"], _summary(report), _matrix(report), _environment(report), _stability(report),
            _ramp(report), _sweep_failures(report)]
    out.write("\n\n".join("\n".join(p).rstrip("\n") for p in head if p) + "\n\n## Results")
    pending = ""  # the last case's text loses its trailing newlines, as the part it ends does
    for stats in with_details(report.results, details):
        out.write(pending)
        lines = _case(stats)
        while lines and not lines[-1]:
            lines.pop()
        pending = "\n\n" + "\n".join(lines)
    out.write(pending.rstrip("\n"))
    apart = _apart(report)
    out.write(("\n\n" + "\n".join(apart).rstrip("\n") if apart else "") + "\n")


def render_markdown(report: SweepReport) -> str:
    """The whole report as Markdown."""
    out = io.StringIO()
    write_markdown(report, out)
    return out.getvalue()
