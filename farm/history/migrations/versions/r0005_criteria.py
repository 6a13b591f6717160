"""Each case's scorecard per criterion (SPEC 17): ``farm_case_criteria``.

Revision ID: r0005
Revises: r0004
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0005"
down_revision = "r0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "farm_case_criteria",
        sa.Column("sweep", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.String(length=1024), nullable=False),
        sa.Column("criterion_id", sa.String(length=32), nullable=False),
        sa.Column("criterion", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("passed", sa.Integer(), nullable=False),
        sa.Column("pass_rate", sa.Float(), nullable=False),
        sa.Column("ci_low", sa.Float(), nullable=False),
        sa.Column("ci_high", sa.Float(), nullable=False),
        sa.Column("label", sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(["sweep"], ["farm_sweeps.id"], name=op.f("fk_farm_case_criteria_sweep"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("sweep", "case_id", "criterion_id", name=op.f("pk_farm_case_criteria")),
    )
    op.create_index("ix_farm_case_criteria_case_sweep", "farm_case_criteria", ["case_id", "sweep"])


def downgrade() -> None:
    op.drop_index("ix_farm_case_criteria_case_sweep", table_name="farm_case_criteria")
    op.drop_table("farm_case_criteria")
