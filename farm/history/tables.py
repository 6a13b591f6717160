"""The history store's schema: SQLAlchemy Core tables (every name prefixed ``farm_``).

``farm_failure_modes`` is ``farm assess``'s memory of each case's failure modes (SPEC 14.3).

The prefix lets the tables share a team's PostgreSQL database with other applications; the
Alembic version table is ``farm_alembic_version`` for the same reason. The schema changes only
through a migration under ``migrations/versions``; ``SCHEMA_REVISION`` names the newest one, so
opening a database that is already current costs one query and no Alembic import.

Times are naive UTC ``DateTime``s (SQLite has no time zones). A sweep is unique by its
``sweep_id``, a case result by (sweep, case id): recording inserts or ignores on those keys.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

SCHEMA_REVISION = "r0010"
"""The newest migration (tests check that it is Alembic's head)."""

VERSION_TABLE = "farm_alembic_version"

metadata = MetaData(naming_convention={
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s",
    "pk": "pk_%(table_name)s",
})

sweeps = Table(
    "farm_sweeps", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("sweep_id", String(128), nullable=False, unique=True),
    Column("started_at", DateTime, nullable=False, index=True),
    Column("finished_at", DateTime),
    Column("recorded_at", DateTime, nullable=False),
    Column("status", String(32), nullable=False),
    Column("stopped", String(32)),
    Column("agent", Text),
    Column("connector", Text),
    Column("git_commit", String(64)),
    Column("git_branch", Text),
    Column("farm_version", String(32)),
    Column("total_cases", Integer, nullable=False),
    Column("total_runs", Integer, nullable=False),
    Column("passed_cases", Integer, nullable=False),
    Column("failed_cases", Integer, nullable=False),
    Column("flaky_cases", Integer, nullable=False),
    Column("broken_cases", Integer, nullable=False),
    Column("skipped_cases", Integer, nullable=False),
    Column("overall_pass_rate", Float, nullable=False),
    Column("duration_ms", Float, nullable=False),
    Column("suites", JSON, nullable=False),
    Column("settings", JSON, nullable=False),
    Column("spend", JSON),  # farm.estimate.spend: what a run cost, for farm test --estimate
    Column("journal", Text),  # the run journal's path on the recording machine (farm view); r0003
)

sweep_tags = Table(
    "farm_sweep_tags", metadata,
    Column("sweep", Integer, ForeignKey("farm_sweeps.id", ondelete="CASCADE"), primary_key=True),
    Column("key", String(128), primary_key=True),
    Column("value", Text, nullable=False),
    Index("ix_farm_sweep_tags_key_value", "key", "value"),
)

case_results = Table(
    "farm_case_results", metadata,
    Column("sweep", Integer, ForeignKey("farm_sweeps.id", ondelete="CASCADE"), primary_key=True),
    Column("case_id", String(1024), primary_key=True),
    Column("suite", Text),
    Column("source", Text),
    Column("content_hash", String(64)),
    Column("runs", Integer, nullable=False),
    Column("passed", Integer, nullable=False),
    Column("failed", Integer, nullable=False),
    Column("errors", Integer, nullable=False),
    Column("timeouts", Integer, nullable=False),
    Column("skipped", Integer, nullable=False),
    Column("pass_rate", Float, nullable=False),
    Column("ci_low", Float, nullable=False),
    Column("ci_high", Float, nullable=False),
    Column("consistency", Float, nullable=False),
    Column("stability_class", String(32), nullable=False),
    Column("label", String(16), nullable=False),
    Column("required_passes", Integer, nullable=False),
    Column("case_passed", Boolean, nullable=False),
    Column("adaptive", Boolean, nullable=False),
    Column("avg_duration_ms", Float, nullable=False),
    Column("min_duration_ms", Float, nullable=False),
    Column("max_duration_ms", Float, nullable=False),
    Column("std_deviation_ms", Float, nullable=False),
    Column("distinct_outputs", Integer, nullable=False),
    Column("semantic_consistency", Float, nullable=True),  # SPEC 16; null: not computed
    Column("trajectory_consistency", Float, nullable=True),  # SPEC 21; null: no run called a tool
    Column("trajectories", JSON, nullable=True),  # runs per path [{path, count}]; null: recorded before r0007
    Column("served", JSON, nullable=True),  # SPEC 25: {models, system_fingerprints, commits}; null: none reported
    Column("load_bias", JSON, nullable=True),  # SPEC 25, r0010: runs by in_flight, split, q, flagged; null: not known
    Column("failure_reasons", JSON, nullable=False),
    Column("pass_at_k", JSON, nullable=False),
    Column("pass_hat_k", JSON, nullable=False),
    # A case's trend reads its rows newest sweep first: one index range scan.
    Index("ix_farm_case_results_case_sweep", "case_id", "sweep"),
)

baselines = Table(
    "farm_baselines", metadata,
    Column("name", String(128), primary_key=True),
    Column("sweep", Integer, ForeignKey("farm_sweeps.id", ondelete="CASCADE"), nullable=False),
    Column("set_at", DateTime, nullable=False),
)

failure_modes = Table(
    "farm_failure_modes", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("case_id", String(1024), nullable=False),
    Column("mode_hash", String(64), nullable=False),
    Column("mode", Text, nullable=False),
    Column("first_seen_at", DateTime, nullable=False),
    # unique on the mode's hash: a mode is free text, too long for every database's index
    UniqueConstraint("case_id", "mode_hash"),
)
"""``farm assess``'s known failure modes per case (``farm.history.modes``), oldest first by ``id``."""

case_criteria = Table(
    "farm_case_criteria", metadata,
    Column("sweep", Integer, ForeignKey("farm_sweeps.id", ondelete="CASCADE"), primary_key=True),
    Column("case_id", String(1024), primary_key=True),
    Column("criterion_id", String(32), primary_key=True),
    Column("criterion", Text, nullable=False),
    Column("kind", String(64), nullable=False),
    Column("turn", Integer, nullable=False),
    Column("runs", Integer, nullable=False),
    Column("passed", Integer, nullable=False),
    Column("pass_rate", Float, nullable=False),
    Column("ci_low", Float, nullable=False),
    Column("ci_high", Float, nullable=False),
    Column("label", String(16), nullable=False),
    Column("judge_flip_rate", Float, nullable=True),  # SPEC 23, r0009; null: not known when recorded
    Column("judge_noisy", Boolean, nullable=True),
    Index("ix_farm_case_criteria_case_sweep", "case_id", "sweep"),
)
"""Each case's scorecard per criterion (SPEC 17): one row per check of each turn."""

judge_checks = Table(
    "farm_judge_checks", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("checked_at", DateTime, nullable=False),
    Column("sweep_id", String(128)),  # the judged sweep's id (not a key: its report need not be recorded)
    Column("source", Text, nullable=False),
    Column("judge", Text, nullable=False),
    Column("repeats", Integer, nullable=False),
    Column("case_id", String(1024), nullable=False),
    Column("criterion_id", String(32)),  # the scorecard's ``turn.check``; null: not matched
    Column("turn", Integer, nullable=False),
    Column("check", String(256), nullable=False),
    Column("criterion", Text, nullable=False),
    Column("outputs", Integer, nullable=False),
    Column("flipped", Integer, nullable=False),
    Column("judge_flip_rate", Float),
    Column("ci_low", Float, nullable=False),
    Column("ci_high", Float, nullable=False),
    Column("judge_noisy", Boolean, nullable=False),
    Index("ix_farm_judge_checks_case_checked", "case_id", "checked_at"),
)
"""``farm judge-check``'s findings per criterion (SPEC 23), one row per criterion of each check."""

comparisons = Table(
    "farm_comparisons", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("base", Integer, ForeignKey("farm_sweeps.id", ondelete="CASCADE"), nullable=False),
    Column("head", Integer, ForeignKey("farm_sweeps.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("kind", String(64), nullable=False),
    Column("created_at", DateTime, nullable=False),
    Column("regressed", Integer, nullable=False),
    Column("document", JSON, nullable=False),
    UniqueConstraint("base", "head", "kind"),
)
