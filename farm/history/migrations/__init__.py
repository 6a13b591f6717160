"""Alembic migrations of the history store, run by ``farm.history.engine.migrate`` on open."""
