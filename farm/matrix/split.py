"""A matrix report as one sweep per arm (SPEC 22): what the history records and compares.

Each arm becomes a report of its own: its results (their own case ids), its summary, sweep id
``MATRIX:ARM`` (so ``farm compare MATRIX:ARM MATRIX:ARM`` names it) and the tags ``matrix``
(the matrix sweep's id) and ``arm`` beside the sweep's own. Pure.
"""

from __future__ import annotations

from farm.models import HistoryRecord, SweepReport
from farm.stats.sweep import summarize

ARM_ID_SEPARATOR = ":"
"""Between a matrix's sweep id and an arm's name in the arm's recorded sweep id."""


def arm_sweep_id(matrix_id: str, arm: str) -> str:
    return f"{matrix_id}{ARM_ID_SEPARATOR}{arm}"


def arm_reports(report: SweepReport) -> list[SweepReport]:
    """One report per arm of a matrix report (``[report]`` itself when it is not a matrix's)."""
    if report.arms is None:
        return [report]
    envelope = report.envelope
    matrix_id = envelope.sweep_id or ""
    history = envelope.history or HistoryRecord()
    reports = []
    for arm in report.arms:
        results = [s for s in report.results if s.arm == arm.name]
        summary = summarize(results, duration_ms=report.summary.duration_ms, runs_per_case=report.summary.runs_per_case)
        tagged = history.model_copy(update={"tags": {**history.tags, "matrix": matrix_id, "arm": arm.name}})
        own = envelope.updated(sweep_id=arm_sweep_id(matrix_id, arm.name), agent_id=arm.agent,
                               connector=arm.connector or envelope.connector, history=tagged)
        reports.append(report.model_copy(update={"results": results, "summary": summary, "envelope": own,
                                                 "arms": None, "matrix": None}))
    return reports


__all__ = ["arm_reports", "arm_sweep_id"]
