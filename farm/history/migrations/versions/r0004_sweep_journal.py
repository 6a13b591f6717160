"""Where a sweep's run journal is (``farm view`` shows the full report while the file is kept).

Revision ID: r0004
Revises: r0003
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0004"
down_revision = "r0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("farm_sweeps") as batch:  # batch: SQLite cannot alter a table in place
        batch.add_column(sa.Column("journal", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("farm_sweeps") as batch:
        batch.drop_column("journal")
