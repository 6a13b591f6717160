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


def parse_json_report(text: str, source: str = "<report>") -> SweepReport:
    """Read back a report written by ``render_json`` (aliases dropped)."""
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
