"""Trajectories per case (SPEC 21): the share of runs on the most common tool-call path (null: no
run called a tool) and the runs per path (null: recorded before paths were kept).

Revision ID: r0007
Revises: r0006
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0007"
down_revision = "r0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("farm_case_results") as batch:
        batch.add_column(sa.Column("trajectory_consistency", sa.Float(), nullable=True))
        batch.add_column(sa.Column("trajectories", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("farm_case_results") as batch:
        batch.drop_column("trajectories")
        batch.drop_column("trajectory_consistency")
