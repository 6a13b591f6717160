"""What served each case (SPEC 25): runs per served model, ``system_fingerprint`` and agent commit
(null: none reported, or recorded before r0008).

Revision ID: r0008
Revises: r0007
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0008"
down_revision = "r0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("farm_case_results") as batch:
        batch.add_column(sa.Column("served", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("farm_case_results") as batch:
        batch.drop_column("served")
