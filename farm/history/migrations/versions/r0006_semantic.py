"""Semantic consistency per case (SPEC 16): null where it was not computed.

Revision ID: r0006
Revises: r0005
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0006"
down_revision = "r0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("farm_case_results") as batch:
        batch.add_column(sa.Column("semantic_consistency", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("farm_case_results") as batch:
        batch.drop_column("semantic_consistency")
