"""Where the history lives and how it is opened: URL, engine, migrations to head on open.

URL: ``farm.history.location.history_url`` (``--history``, ``FARM_HISTORY_URL``, default SQLite
under the farm's data directory). SQLite and PostgreSQL (``postgresql+psycopg://…``, psycopg 3; a plain
``postgresql://`` is read as psycopg 3 too) are supported.

Opening migrates an empty or older database to the newest schema with Alembic, run
programmatically on the open connection. A database already at ``SCHEMA_REVISION`` costs one
query and no Alembic import. Two processes opening an empty database at once: PostgreSQL
serialises them with an advisory lock, SQLite with an exclusive ``flock`` of a file beside the
database (``FILE.migrating``); either way the second finds the schema made and goes on.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect, select, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from farm.errors import FarmRuntimeError, SettingsError
from farm.extras import install_hint
from farm.history.inbox import inbox_of, waiting
from farm.history.tables import SCHEMA_REVISION, VERSION_TABLE

SUPPORTED_DIALECTS = ("sqlite", "postgresql")
SQLITE_BUSY_TIMEOUT_S = 30.0
"""How long a SQLite writer waits for another (recording is one short transaction)."""
PG_CONNECT_TIMEOUT_S = 10
"""Seconds to reach a PostgreSQL server, unless the URL says otherwise (``?connect_timeout=``)."""
MIGRATE_ATTEMPTS = 3
MIGRATION_LOCK_SUFFIX = ".migrating"
"""Beside a SQLite history ``history.sqlite``: ``history.sqlite.migrating``, locked while it is migrated."""
_PG_MIGRATION_LOCK = 0x6661726D  # "farm": the advisory lock key that serialises migrations


def safe_url(url: str | URL) -> str:
    """The URL with its password hidden (for messages)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


def parse_url(url: str) -> URL:
    """A SQLAlchemy URL of a supported database; SettingsError (exit 2) otherwise."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise SettingsError(f"history URL {safe_url(url)!r}: not a database URL (e.g. sqlite:///path "
                            "or postgresql+psycopg://user@host/db)") from None
    if parsed.get_backend_name() not in SUPPORTED_DIALECTS:
        raise SettingsError(f"history URL {safe_url(parsed)}: unsupported database "
                            f"{parsed.get_backend_name()!r} (supported: {', '.join(SUPPORTED_DIALECTS)})")
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def create_history_engine(url: str) -> Engine:
    """An engine for ``url`` (SQLite: the file's directory made, WAL, foreign keys on)."""
    parsed = parse_url(url)
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            directory = Path(parsed.database).expanduser().parent
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise FarmRuntimeError(f"history {safe_url(parsed)}: cannot create {directory}: "
                                       f"{exc.strerror or exc}") from None
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_S}
    elif "connect_timeout" not in parsed.query:
        kwargs["connect_args"] = {"connect_timeout": PG_CONNECT_TIMEOUT_S}  # libpq waits on TCP forever
    try:
        engine = create_engine(parsed, **kwargs)
    except (ArgumentError, NoSuchModuleError, ImportError) as exc:
        hint = f" ({install_hint('postgres')})" if parsed.get_backend_name() == "postgresql" else ""
        raise SettingsError(f"history URL {safe_url(parsed)}: {exc}{hint}") from None
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def missing_sqlite_file(url: str) -> bool:
    """``url`` names a SQLite file that does not exist and no sweep waits in its inbox (a read opens
    nothing there: opening would create it)."""
    parsed = parse_url(url)
    database = parsed.database
    return (parsed.get_backend_name() == "sqlite" and bool(database) and database != ":memory:"
            and not Path(str(database)).expanduser().exists() and not waiting(inbox_of(url)))


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never wait for the one writer
    cursor.close()


def current_revision(engine: Engine) -> str | None:
    """The schema revision the database is at (None: an empty database)."""
    with engine.connect() as conn:
        if not inspect(conn).has_table(VERSION_TABLE):
            return None
        return conn.execute(select(text("version_num")).select_from(text(VERSION_TABLE))).scalar()


def _alembic_config() -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(resources.files("farm.history") / "migrations"))
    return config


def known_revisions() -> set[str]:
    """Every schema revision this farm has a migration for (as Alembic reads them)."""
    from alembic.script import ScriptDirectory

    return {script.revision for script in ScriptDirectory.from_config(_alembic_config()).walk_revisions()}


def check_is_farm_history(engine: Engine, revision: str | None) -> None:
    """SettingsError (exit 2) for a database the farm must not migrate: another program's, or a newer farm's."""
    where = f"history {safe_url(engine.url)}"
    if revision is not None and revision not in known_revisions():
        raise SettingsError(f"{where}: written by a newer agent-farm (schema revision {revision}; this one knows "
                            f"up to {SCHEMA_REVISION}): upgrade agent-farm, or use another --history")
    if revision is None:
        with engine.connect() as conn:
            found = sorted(inspect(conn).get_table_names())
        if found:
            shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
            raise SettingsError(f"{where}: not a farm history database (it holds tables {shown} and no "
                                f"{VERSION_TABLE}): give --history (or FARM_HISTORY_URL) a database of its own")


def migrate(engine: Engine) -> None:
    """Bring the database to the newest schema (a no-op when it is there already); SettingsError for a
    database that is not the farm's or is newer than this farm."""
    for attempt in range(1, MIGRATE_ATTEMPTS + 1):
        try:
            if current_revision(engine) == SCHEMA_REVISION:
                return
            with _migrating(engine):  # looked at again once no other process migrates the file
                revision = current_revision(engine)
                if revision != SCHEMA_REVISION:
                    check_is_farm_history(engine, revision)
                    _upgrade(engine)
            return
        except DBAPIError as exc:
            # SQLite: busy beyond its timeout (a writer of another farm that takes no migration lock)
            if attempt == MIGRATE_ATTEMPTS:
                raise FarmRuntimeError(f"history {safe_url(engine.url)}: cannot open: {error_reason(exc)}") from exc
            time.sleep(0.25 * attempt)


@contextmanager
def _migrating(engine: Engine) -> Iterator[None]:
    """SQLite: hold ``FILE.migrating`` (an exclusive ``flock``) while the file is looked at and migrated.
    Each CREATE commits on its own, so a new file another process migrates holds its first tables
    before the version table: read then, it looked like another program's database (exit 2; three
    readers of a new history at once in CI). PostgreSQL's DDL is transactional and ``_upgrade``
    takes an advisory lock there."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        yield
        return
    lock = Path(database).expanduser()
    with open(lock.with_name(lock.name + MIGRATION_LOCK_SUFFIX), "a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # released when the file closes (or its process dies)
        yield


def _upgrade(engine: Engine) -> None:
    from alembic import command

    config = _alembic_config()
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


def error_reason(exc: BaseException) -> str:
    """A database error in one line: the driver's message, never the statement or its parameters."""
    if isinstance(exc, DBAPIError):
        exc = exc.orig if exc.orig is not None else exc
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def open_engine(url: str, *, create: bool = True) -> Engine:
    """An engine on a migrated database; SettingsError on a bad URL, FarmRuntimeError when unreachable.

    ``create=False`` (a read): a SQLite file that does not exist is not made, nor its directory;
    the reader sees an empty history (an in-memory database).
    """
    if not create and missing_sqlite_file(url):
        url = "sqlite://"
    engine = create_history_engine(url)
    migrate(engine)
    return engine
