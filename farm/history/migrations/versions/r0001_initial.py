"""The initial schema: sweeps, their tags, case results, baselines and stored comparisons.

Revision ID: r0001
Revises: (none)
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0001"
down_revision = None
branch_labels = None
depends_on = None


def _sweep_fk(column: str, table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], ["farm_sweeps.id"], name=op.f(f"fk_{table}_{column}"),
                                   ondelete="CASCADE")


def upgrade() -> None:
    op.create_table(
        "farm_sweeps",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("sweep_id", sa.String(length=128), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("recorded_at", sa.DateTime(), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("stopped", sa.String(length=32), nullable=True),
        sa.Column("agent", sa.Text(), nullable=True),
        sa.Column("connector", sa.Text(), nullable=True),
        sa.Column("git_commit", sa.String(length=64), nullable=True),
        sa.Column("git_branch", sa.Text(), nullable=True),
        sa.Column("farm_version", sa.String(length=32), nullable=True),
        *[sa.Column(name, sa.Integer(), nullable=False) for name in (
            "total_cases", "total_runs", "passed_cases", "failed_cases", "flaky_cases", "broken_cases",
            "skipped_cases")],
        sa.Column("overall_pass_rate", sa.Float(), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("suites", sa.JSON(), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_farm_sweeps")),
        sa.UniqueConstraint("sweep_id", name=op.f("uq_farm_sweeps_sweep_id")),
    )
    op.create_index(op.f("ix_farm_sweeps_started_at"), "farm_sweeps", ["started_at"])
    op.create_table(
        "farm_sweep_tags",
        sa.Column("sweep", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        _sweep_fk("sweep", "farm_sweep_tags"),
        sa.PrimaryKeyConstraint("sweep", "key", name=op.f("pk_farm_sweep_tags")),
    )
    op.create_index("ix_farm_sweep_tags_key_value", "farm_sweep_tags", ["key", "value"])
    op.create_table(
        "farm_case_results",
        sa.Column("sweep", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.String(length=1024), nullable=False),
        sa.Column("suite", sa.Text(), nullable=True),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("content_hash", sa.String(length=64), nullable=True),
        *[sa.Column(name, sa.Integer(), nullable=False) for name in (
            "runs", "passed", "failed", "errors", "timeouts", "skipped")],
        *[sa.Column(name, sa.Float(), nullable=False) for name in ("pass_rate", "ci_low", "ci_high", "consistency")],
        sa.Column("stability_class", sa.String(length=32), nullable=False),
        sa.Column("label", sa.String(length=16), nullable=False),
        sa.Column("required_passes", sa.Integer(), nullable=False),
        sa.Column("case_passed", sa.Boolean(), nullable=False),
        sa.Column("adaptive", sa.Boolean(), nullable=False),
        *[sa.Column(name, sa.Float(), nullable=False) for name in (
            "avg_duration_ms", "min_duration_ms", "max_duration_ms", "std_deviation_ms")],
        sa.Column("distinct_outputs", sa.Integer(), nullable=False),
        *[sa.Column(name, sa.JSON(), nullable=False) for name in ("failure_reasons", "pass_at_k", "pass_hat_k")],
        _sweep_fk("sweep", "farm_case_results"),
        sa.PrimaryKeyConstraint("sweep", "case_id", name=op.f("pk_farm_case_results")),
    )
    op.create_index("ix_farm_case_results_case_sweep", "farm_case_results", ["case_id", "sweep"])
    op.create_table(
        "farm_baselines",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("sweep", sa.Integer(), nullable=False),
        sa.Column("set_at", sa.DateTime(), nullable=False),
        _sweep_fk("sweep", "farm_baselines"),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_farm_baselines")),
    )
    op.create_table(
        "farm_comparisons",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("base", sa.Integer(), nullable=False),
        sa.Column("head", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("regressed", sa.Integer(), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        _sweep_fk("base", "farm_comparisons"),
        _sweep_fk("head", "farm_comparisons"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_farm_comparisons")),
        sa.UniqueConstraint("base", "head", "kind", name=op.f("uq_farm_comparisons_base_head_kind")),
    )
    op.create_index(op.f("ix_farm_comparisons_head"), "farm_comparisons", ["head"])


def downgrade() -> None:
    for table in ("farm_comparisons", "farm_baselines", "farm_case_results", "farm_sweep_tags", "farm_sweeps"):
        op.drop_table(table)
