"""The JSON report: ``SweepReport`` as JSON, plus the Yao report's field names.

Yao's report calls the case counts ``total``/``passed``/``failed``/``skipped`` inside
``summary`` and gives every result a ``status``; those aliases are added so Yao users' ``jq``
scripts keep working. ``parse_json_report`` drops them again.
"""

from __future__ import annotations

import io
import json
from typing import Any, TextIO

from farm.errors import InputError
from farm.models import CaseStats, SweepReport
from farm.reports.details import RunDetailsSource, with_details
from farm.stats import case_verdict

SUMMARY_ALIASES = ("total", "passed", "failed", "skipped", "agent_id", "connector")
"""Keys added to ``summary`` that are not ``SweepSummary`` fields."""

RESULT_ALIASES = ("status", "output", "error", "duration_ms")
"""Keys added to each result that are not ``CaseStats`` fields."""


def yao_summary_aliases(report: SweepReport) -> dict[str, Any]:
    """Yao's summary counts (cases, by verdict) and the agent and connector it names."""
    s = report.summary
    return {
        "total": s.total_cases,
        "passed": s.passed_cases,
        "failed": s.failed_cases,
        "skipped": s.skipped_cases,
        "agent_id": report.envelope.agent_id,
        "connector": report.envelope.connector,
    }


def _result_aliases(stats: CaseStats) -> dict[str, Any]:
    aliases: dict[str, Any] = {"status": case_verdict(stats), "duration_ms": stats.avg_duration_ms}
    if len(stats.run_details) == 1:
        # A one-run case reads like Yao's single-run result: its output and error inline.
        detail = stats.run_details[0]
        aliases |= {"output": detail.output, "error": detail.error}
    return aliases


def result_document(stats: CaseStats) -> dict[str, Any]:
    """One case of the report as a JSON-able dict, aliases included."""
    dumped = stats.model_dump(mode="json")
    return {"id": dumped["id"], **_result_aliases(stats), **dumped}


def report_document(report: SweepReport) -> dict[str, Any]:
    """The report as a JSON-able dict, aliases included."""
    doc = report.model_dump(mode="json")
    doc["summary"] = doc["summary"] | yao_summary_aliases(report)
    pairs = zip(report.results, doc["results"], strict=True)
    doc["results"] = [{"id": dumped["id"], **_result_aliases(stats), **dumped} for stats, dumped in pairs]
    return doc


_NO_RESULTS = '\n  "results": []'
"""The top-level results key as ``json.dumps(indent=2)`` writes it for an empty list: strings hold no
raw newline and nested keys are indented deeper, so it occurs once."""


def write_json(report: SweepReport, out: TextIO, details: RunDetailsSource | None = None) -> None:
    """``render_json``'s text written to ``out`` one case at a time (each case's run details
    from ``details`` when given): memory holds one case's document, not the report's."""
    shell = report_document(report.model_copy(update={"results": []}))
    head, tail = json.dumps(shell, indent=2, ensure_ascii=False).split(_NO_RESULTS)
    out.write(head + '\n  "results": [')
    first = True
    for stats in with_details(report.results, details):
        text = json.dumps(result_document(stats), indent=2, ensure_ascii=False).replace("\n", "\n    ")
        out.write(("\n    " if first else ",\n    ") + text)
        first = False
    out.write(("]" if first else "\n  ]") + tail + "\n")


def render_json(report: SweepReport) -> str:
    """The report as indented JSON text."""
    out = io.StringIO()
    write_json(report, out)
    return out.getvalue()


RUN_DETAILS_KEY = b'\n      "run_details": ['
"""A result's ``run_details`` as ``write_json`` lays it out (a result's keys six spaces in)."""

RUN_DETAILS_END = b'\n      ],\n      "run_details_truncated": '
"""Its closing bracket, and the field ``write_json`` writes next. Inside the list every line is
indented deeper (a string holds no raw newline), so the first line of six spaces and ``]`` after
the key closes it; searching for the key after it too is five times faster (spaces are common)."""


def without_run_details(data: bytes) -> bytes | None:
    """``data`` with every result's ``run_details`` emptied, found by ``write_json``'s layout
    without parsing them (most of a report's bytes); None when the layout is not that one."""
    pieces, pos = [], 0
    key = data.find(RUN_DETAILS_KEY)
    while key >= 0:
        start = key + len(RUN_DETAILS_KEY)
        key = data.find(RUN_DETAILS_KEY, start)
        if data.startswith(b"]", start):
            continue
        end = data.find(RUN_DETAILS_END, start)
        if end < 0 or 0 <= key < end:  # not closed before the next result's list: another layout
            return None
        pieces.append(data[pos:start])
        pos = end + 7  # the closing bracket stays
    if not pieces and b'"run_details"' in data:
        return None  # another layout (compact, or indented otherwise): parse it whole
    pieces.append(data[pos:])
    return b"".join(pieces)


def parse_json_report(text: str | bytes, source: str = "<report>", *, details: bool = True) -> SweepReport:
    """Read back a report written by ``render_json`` (aliases dropped; bytes: UTF-8). ``details=False``:
    the results' ``run_details`` are not needed, so they are left empty, unparsed, when the file
    has ``write_json``'s layout (a comparison needs each case's figures only: a tenth of the time
    and memory); another layout is read whole."""
    if not details:
        lean = without_run_details(text.encode() if isinstance(text, str) else text)
        if lean is not None:
            try:
                return _parse(lean, source)
            except InputError:
                pass  # the error is reported against the whole file's lines below
    return _parse(text, source)


def _parse(text: str | bytes, source: str) -> SweepReport:
    try:
        doc = json.loads(text)
        for key in SUMMARY_ALIASES:
            doc["summary"].pop(key, None)
        for result in doc["results"]:
            for key in RESULT_ALIASES:
                result.pop(key, None)
        return SweepReport.model_validate(doc)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{source}: not a farm JSON report: {exc}") from exc
