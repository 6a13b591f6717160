"""Record a finished sweep: one row per sweep, its tags, one row per case; idempotent.

Everything recorded comes from the ``SweepReport`` itself: the sweep facts the submitter put in
its metadata (``tags``, ``git``, ``suites``, ``settings``: ``farm.history.facts``) travel with
the report, so a worker recording a detached sweep records the same as the submitter would.

The sweep row is inserted-or-ignored on its unique ``sweep_id`` in the same transaction as its
tags and cases: a sweep recorded twice (a redelivered ``farm.report``, a re-run of ``farm
test``'s recording) is stored once, and a half-recorded sweep never exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, Insert, Table, select

from farm.estimate.spend import spend_of
from farm.history.criteria import record_criteria
from farm.history.tables import case_results, sweep_tags, sweeps
from farm.models import CaseStats, SweepEnvelope, SweepOutcome, SweepReport
from farm.models.outcome import outcome_of
from farm.stats.compare_terms import is_adaptive
from farm.stats.path_change import paths_of


@dataclass(frozen=True)
class Recorded:
    """The sweep's row id, and whether this call stored it (False: it was there already)."""

    pk: int
    created: bool


def utc(value: Any) -> datetime | None:
    """An ISO-8601 time (``…Z`` or with an offset) as naive UTC; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed


def now_utc() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def insert_or_ignore(conn: Connection, table: Table) -> Insert:
    """``INSERT … ON CONFLICT DO NOTHING`` in the connection's dialect."""
    # the dialect in use only: PostgreSQL's module costs a SQLite history about 50 ms of import
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table).on_conflict_do_nothing()
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table).on_conflict_do_nothing()


def sweep_status(outcome: SweepOutcome | Mapping[str, Any]) -> str:
    """SPEC 11's status when the report has one; else ``stopped`` when it says why, else ``complete``
    (of a report's outcome, or of a metadata dict as written out)."""
    return (outcome if isinstance(outcome, SweepOutcome) else outcome_of(outcome)).sweep_status()


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def sweep_row(report: SweepReport, recorded_at: datetime) -> dict[str, Any]:
    meta, s = report.envelope, report.summary
    history = meta.history
    git = _mapping(history.git if history is not None else None)
    return {
        "sweep_id": str(meta.sweep_id or ""), "started_at": utc(meta.started_at) or recorded_at,
        "finished_at": utc(meta.completed_at), "recorded_at": recorded_at,
        "status": sweep_status(report.outcome), "stopped": _text(report.outcome.stopped),
        "agent": _text(meta.agent_id), "connector": _text(meta.connector),
        "git_commit": _text(git.get("commit")), "git_branch": _text(git.get("branch")),
        "farm_version": _text(meta.version),
        "total_cases": s.total_cases, "total_runs": s.total_runs, "passed_cases": s.passed_cases,
        "failed_cases": s.failed_cases, "flaky_cases": s.flaky_cases, "broken_cases": s.broken_cases,
        "skipped_cases": s.skipped_cases, "overall_pass_rate": s.overall_pass_rate, "duration_ms": s.duration_ms,
        "suites": history.suites if history is not None else {},
        "settings": history.settings if history is not None else {},
        "spend": spend_of(report),
        "journal": _text(history.journal if history is not None else None),
    }


def case_row(sweep_pk: int, stats: CaseStats, envelope: SweepEnvelope) -> dict[str, Any]:
    return {
        "sweep": sweep_pk, "case_id": stats.id, "suite": stats.suite, "source": stats.source,
        "content_hash": stats.content_hash, "runs": stats.runs, "passed": stats.passed, "failed": stats.failed,
        "errors": stats.errors, "timeouts": stats.timeouts, "skipped": stats.skipped, "pass_rate": stats.pass_rate,
        "ci_low": stats.pass_rate_ci[0], "ci_high": stats.pass_rate_ci[1], "consistency": stats.consistency,
        "stability_class": str(stats.stability_class), "label": stats.label,
        "required_passes": stats.required_passes, "case_passed": stats.case_passed,
        "adaptive": is_adaptive(stats, envelope),
        "avg_duration_ms": stats.avg_duration_ms, "min_duration_ms": stats.min_duration_ms,
        "max_duration_ms": stats.max_duration_ms, "std_deviation_ms": stats.std_deviation_ms,
        "distinct_outputs": stats.distinct_outputs, "semantic_consistency": stats.semantic_consistency,
        "trajectory_consistency": stats.trajectory_consistency,
        "trajectories": [p.model_dump() for p in paths_of(stats.trajectories, stats.runs - stats.skipped)],
        "served": None if stats.served is None else stats.served.model_dump(),
        "load_bias": None if stats.load_bias is None else stats.load_bias.model_dump(),
        "failure_reasons": [r.model_dump() for r in stats.failure_reasons],
        "pass_at_k": stats.pass_at_k, "pass_hat_k": stats.pass_hat_k,
    }


def tag_rows(sweep_pk: int, envelope: SweepEnvelope) -> list[dict[str, Any]]:
    return [{"sweep": sweep_pk, "key": str(k), "value": str(v)} for k, v in envelope.tags.items()]


def record_sweep(engine: Engine, report: SweepReport) -> Recorded:
    """Store ``report`` once (by its sweep id); a second call finds it and stores nothing."""
    row = sweep_row(report, now_utc())
    if not row["sweep_id"]:
        raise ValueError("a report without metadata.sweep_id cannot be recorded")
    with engine.begin() as conn:
        pk = conn.execute(insert_or_ignore(conn, sweeps).values(row).returning(sweeps.c.id)).scalar()
        if pk is None:
            existing = conn.execute(select(sweeps.c.id).where(sweeps.c.sweep_id == row["sweep_id"])).scalar_one()
            return Recorded(existing, created=False)
        tags = tag_rows(pk, report.envelope)
        if tags:
            conn.execute(sweep_tags.insert(), tags)
        rows = [case_row(pk, stats, report.envelope) for stats in report.results]
        if rows:
            conn.execute(case_results.insert(), rows)
        record_criteria(conn, pk, report)
    return Recorded(pk, created=True)
