"""Renderers: a ``SweepReport`` in, text out, chosen by format name or output file extension.

JSON and JSONL load with the package (every sweep writes one); Markdown, JUnit, the summary and
HTML (Jinja2) are imported only when asked for (``farm.reports.markdown``, ``junit``, ``summary``,
``html``: a plain ``farm test`` pays none of them). ``write_rendered``
streams a report to a file case by case; a report whose run details are kept elsewhere (an
in-process sweep's journal, ``farm.reports.details``) gets them one case at a time.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from farm.errors import SettingsError
from farm.models import SweepReport
from farm.reports.details import RunDetailsSource, details_source
from farm.reports.json_report import parse_json_report, render_json, write_json
from farm.reports.jsonl import JsonlWriter, read_jsonl_events, render_jsonl

BUILTIN_REPORTERS = {
    "report.json": "json",
    "report.markdown": "markdown",
    "report.html": "html",
    "report.summary": "summary",
}
"""``-r`` ids handled without an agent, and the format each renders."""

EXTENSION_FORMATS = {
    ".jsonl": "jsonl",
    ".json": "json",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xml": "junit",
}
"""``-o`` extension → format."""


# The formats below load when one is asked for: not every sweep writes them (the module docstring).


def _render_markdown(report: SweepReport) -> str:
    from farm.reports.markdown import render_markdown

    return render_markdown(report)


def _render_junit(report: SweepReport) -> str:
    from farm.reports.junit import render_junit

    return render_junit(report)


def _render_summary(report: SweepReport) -> str:
    from farm.reports.summary import render_summary

    return render_summary(report)


def _render_html(report: SweepReport) -> str:
    from farm.reports.html import render_html  # heavier still (Jinja2)

    return render_html(report)


RENDERERS: dict[str, Callable[[SweepReport], str]] = {
    "jsonl": render_jsonl,
    "json": render_json,
    "markdown": _render_markdown,
    "html": _render_html,
    "junit": _render_junit,
    "summary": _render_summary,
}
"""Format name → renderer."""


Writer = Callable[[SweepReport, TextIO, RunDetailsSource | None], None]


def _write_markdown(report: SweepReport, out: TextIO, details: RunDetailsSource | None) -> None:
    from farm.reports.markdown import write_markdown

    write_markdown(report, out, details)


def _write_junit(report: SweepReport, out: TextIO, details: RunDetailsSource | None) -> None:
    from farm.reports.junit import write_junit

    write_junit(report, out, details)


def _write_html(report: SweepReport, out: TextIO, details: RunDetailsSource | None) -> None:
    from farm.reports.html import write_html

    write_html(report, out, details)


def _whole(render: Callable[[SweepReport], str]) -> Writer:
    """A format that shows no run details, written in one piece."""
    def write(report: SweepReport, out: TextIO, details: RunDetailsSource | None) -> None:
        out.write(render(report))
    return write


WRITERS: dict[str, Writer] = {
    "jsonl": _whole(render_jsonl),
    "json": write_json,
    "markdown": _write_markdown,
    "html": _write_html,
    "junit": _write_junit,
    "summary": _whole(_render_summary),
}
"""Format name → streaming writer (the text ``RENDERERS`` make, written case by case)."""


def writer_for(fmt: str) -> Writer:
    """The writer of ``fmt``; SettingsError for a format with none."""
    try:
        return WRITERS[fmt]
    except KeyError:
        raise SettingsError(
            f"unknown report format {fmt!r} (expected one of: {', '.join(sorted(RENDERERS))})"
        ) from None


def write_rendered(report: SweepReport, fmt: str, out: TextIO) -> None:
    """``report`` rendered as ``fmt`` into ``out``, with the run details attached to it, if any."""
    writer_for(fmt)(report, out, details_source(report))


def render_report(report: SweepReport, fmt: str) -> str:
    """``report`` rendered as ``fmt`` (one of ``RENDERERS``)."""
    out = io.StringIO()
    write_rendered(report, fmt, out)
    return out.getvalue()


def format_for_path(path: str | Path) -> str:
    """The format an output file's extension asks for; an unknown extension is an input error."""
    suffix = Path(path).suffix.lower()
    try:
        return EXTENSION_FORMATS[suffix]
    except KeyError:
        shown = f"extension {suffix!r}" if suffix else "no extension"
        raise SettingsError(
            f"{path}: cannot tell the output format from {shown} "
            f"(supported: {', '.join(EXTENSION_FORMATS)}; or pass -r REPORTER)"
        ) from None


__all__ = [
    "BUILTIN_REPORTERS",
    "EXTENSION_FORMATS",
    "RENDERERS",
    "WRITERS",
    "JsonlWriter",
    "format_for_path",
    "parse_json_report",
    "read_jsonl_events",
    "render_json",
    "render_jsonl",
    "render_report",
    "write_rendered",
    "writer_for",
]
