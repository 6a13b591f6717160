"""Alembic's entry point for the farm's history migrations.

Run only programmatically (``farm.history.engine.migrate``), which hands over an open connection
in ``config.attributes["connection"]``; there is no ``alembic.ini`` and no offline mode.
"""

from __future__ import annotations

from alembic import context

from farm.history.tables import VERSION_TABLE, metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    version_table=VERSION_TABLE,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copying them
)
with context.begin_transaction():
    context.run_migrations()
