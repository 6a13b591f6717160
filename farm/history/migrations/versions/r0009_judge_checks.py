"""Judge trust in the history (SPEC 23): ``farm_judge_checks``, one row per criterion of each
``farm judge-check``, so a judge getting noisier shows over time; and each scorecard criterion's
``judge_flip_rate``/``judge_noisy`` as the sweep knew them (null: not known).

Revision ID: r0009
Revises: r0008
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0009"
down_revision = "r0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "farm_judge_checks",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("checked_at", sa.DateTime(), nullable=False),
        sa.Column("sweep_id", sa.String(length=128), nullable=True),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("judge", sa.Text(), nullable=False),
        sa.Column("repeats", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.String(length=1024), nullable=False),
        sa.Column("criterion_id", sa.String(length=32), nullable=True),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("check", sa.String(length=256), nullable=False),
        sa.Column("criterion", sa.Text(), nullable=False),
        sa.Column("outputs", sa.Integer(), nullable=False),
        sa.Column("flipped", sa.Integer(), nullable=False),
        sa.Column("judge_flip_rate", sa.Float(), nullable=True),
        sa.Column("ci_low", sa.Float(), nullable=False),
        sa.Column("ci_high", sa.Float(), nullable=False),
        sa.Column("judge_noisy", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_farm_judge_checks")),
    )
    op.create_index("ix_farm_judge_checks_case_checked", "farm_judge_checks", ["case_id", "checked_at"])
    with op.batch_alter_table("farm_case_criteria") as batch:
        batch.add_column(sa.Column("judge_flip_rate", sa.Float(), nullable=True))
        batch.add_column(sa.Column("judge_noisy", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("farm_case_criteria") as batch:
        batch.drop_column("judge_noisy")
        batch.drop_column("judge_flip_rate")
    op.drop_index("ix_farm_judge_checks_case_checked", table_name="farm_judge_checks")
    op.drop_table("farm_judge_checks")
