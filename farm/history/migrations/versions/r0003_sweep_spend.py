"""What a recorded sweep spent per run (tokens, cost, run time): ``farm test --estimate`` reads it (SPEC 18).

Revision ID: r0003
Revises: r0002
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0003"
down_revision = "r0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("farm_sweeps", sa.Column("spend", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("farm_sweeps") as batch:
        batch.drop_column("spend")
