"""Databases for the history tests: a SQLite file per test, and a PostgreSQL database per session.

PostgreSQL: the server at ``FARM_TEST_POSTGRES_URL`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``, trust auth) gets a database of our own,
``farm_test_<random>``, created for the session and dropped at its end; each test starts with it
empty (the farm's tables are dropped after every test). An unreachable server skips the
PostgreSQL tests with a reason naming it, except under CI (env ``CI`` set), where they fail.

``tests/conftest.py`` loads this module as a plugin, so every test module can ask for the fixtures.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def _admin_url() -> str:
    return os.environ.get("FARM_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)


def _unavailable(reason: str) -> None:
    message = f"PostgreSQL at {make_url(_admin_url()).render_as_string(hide_password=True)} is unreachable: {reason}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """URL of a fresh PostgreSQL database of this session's own (dropped at the end)."""
    admin = create_engine(_admin_url(), isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 5})
    name = f"farm_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # any driver or network failure means: no PostgreSQL here
        admin.dispose()
        _unavailable(str(exc).splitlines()[0])
    try:
        yield make_url(_admin_url()).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _drop_farm_tables(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            for table in ("farm_comparisons", "farm_baselines", "farm_judge_checks", "farm_case_criteria",
                          "farm_case_results", "farm_sweep_tags", "farm_sweeps", "farm_failure_modes",
                          "farm_alembic_version"):
                conn.execute(text(f"DROP TABLE IF EXISTS {table} CASCADE"))
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def history_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty history database: a SQLite file, or the session's PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'history.sqlite'}"
        return
    url = request.getfixturevalue("postgres_database")
    try:
        yield url
    finally:
        _drop_farm_tables(url)


@pytest.fixture
def sqlite_history_url(tmp_path: Path) -> str:
    """A SQLite history file of this test's own (for tests that need no PostgreSQL twin)."""
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


def take_inbox(url: str) -> None:
    """Record the sweeps ``farm test`` left in a SQLite history's inbox, as every reader of the history
    does first (``farm.history.inbox``): for a test that reads the database itself."""
    from farm.history.store import HistoryStore

    HistoryStore.open(url).close()
