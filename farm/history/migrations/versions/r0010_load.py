"""Load in the history (SPEC 25): each case's ``load_bias``, its scored runs by ``in_flight`` (the
sweep's runs in flight as each began) and their split at the sweep's median, Fisher's q and the
flag (null: no run knew its load, or recorded before r0010).

Revision ID: r0010
Revises: r0009
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0010"
down_revision = "r0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("farm_case_results") as batch:
        batch.add_column(sa.Column("load_bias", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("farm_case_results") as batch:
        batch.drop_column("load_bias")
