"""The failure modes ``farm assess`` has named, per case (SPEC 14.3).

Revision ID: r0002
Revises: r0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0002"
down_revision = "r0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "farm_failure_modes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("case_id", sa.String(length=1024), nullable=False),
        sa.Column("mode_hash", sa.String(length=64), nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("first_seen_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_farm_failure_modes")),
        sa.UniqueConstraint("case_id", "mode_hash", name=op.f("uq_farm_failure_modes_case_id_mode_hash")),
    )


def downgrade() -> None:
    op.drop_table("farm_failure_modes")
