"""A report read back from a ``-o report.jsonl`` event stream (not a run journal).

The stream holds each case's statistics (its ``stability`` line) and, when the sweep finished,
the ``summary`` with the report's metadata; its ``result`` lines are Yao's per-run view, not the
runs a journal keeps, so the report rebuilt from it has the cases' figures without run details.
A stream cut short (no ``summary``) gets a summary computed from the cases it holds, and its
status says it is partial (``running``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from farm.errors import InputError
from farm.models import CaseStats, SweepEnvelope, SweepOutcome, SweepReport, SweepStatus, SweepSummary
from farm.reports.json_report import SUMMARY_ALIASES
from farm.reports.jsonl import read_jsonl_events
from farm.stats import summarize


def is_event_stream(path: str | Path) -> bool:
    """The file starts like a ``-o`` JSONL stream (a ``start`` line) and is no journal (whose second
    line is its ``plan``, possibly huge: only its beginning is read)."""
    try:
        with open(path, encoding="utf-8") as handle:
            first, second = handle.readline(), handle.read(64)
    except (OSError, UnicodeDecodeError):
        return False
    return first.startswith('{"type": "start"') and not second.startswith('{"type": "plan"')


def report_from_stream(path: str | Path) -> SweepReport:
    """The report a JSONL event stream holds: its cases' statistics, its summary and metadata."""
    start: dict[str, Any] = {}
    cases: list[CaseStats] = []
    summary: dict[str, Any] | None = None
    try:
        for event in read_jsonl_events(path):
            kind = event.pop("type", None)
            if kind == "start":
                start = event
            elif kind == "stability":
                cases.append(CaseStats.model_validate(event))
            elif kind == "summary":
                summary = event
    except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        raise InputError(f"{path}: not a readable farm JSONL report: {exc}") from None
    if summary is None:
        return _partial(start, cases)
    metadata = summary.pop("metadata", None) or {}
    for key in SUMMARY_ALIASES:
        summary.pop(key, None)
    try:
        figures = SweepSummary.model_validate(summary)
        return SweepReport(summary=figures, environment={}, results=cases, metadata=metadata)
    except ValueError as exc:
        raise InputError(f"{path}: not a readable farm JSONL summary: {exc}") from None


def _partial(start: dict[str, Any], cases: list[CaseStats]) -> SweepReport:
    """A stream that stops before its summary: the cases it holds, flagged as not finished."""
    told = {"sweep_id": start.get("sweep_id"), "agent_id": start.get("agent_id"), "started_at": start.get("timestamp")}
    envelope = SweepEnvelope.model_validate({k: str(v) for k, v in told.items() if v is not None})
    outcome = SweepOutcome(status=SweepStatus.RUNNING,
                           reason="the JSONL stream ends before its summary: the sweep had not finished")
    runs = max((c.runs_planned or c.runs for c in cases), default=1)
    return SweepReport(summary=summarize(cases, duration_ms=0.0, runs_per_case=runs), environment={},
                       results=cases, envelope=envelope, outcome=outcome)


__all__ = ["is_event_stream", "report_from_stream"]
