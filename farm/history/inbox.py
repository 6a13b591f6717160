"""The history's inbox: a ``farm test`` leaves its finished sweep beside a SQLite history, the next reader records it.

Recording costs a ``farm test`` about 0.1 s it need not wait for (issue 45): SQLAlchemy's import,
the engine, the schema check, the insert. So when the history is a SQLite file (the farm's own,
or a ``--history sqlite:///PATH`` / ``FARM_HISTORY_URL``) and the session opened no store anyway,
``farm test`` writes its finished report (JSON, as ``HistorySession.finish`` hands it to the
store) to ``PATH.inbox/SWEEP_ID.json``: a temporary file renamed into place, so a reader never
sees half an entry. Every ``HistoryStore.open`` of that file records what waits there first,
with ``HistoryStore.record`` (the one way a sweep is recorded: the inbox only defers it), then
removes the entry. Recording is idempotent on the sweep id, so two readers taking the same entry
at once store the sweep once.

An entry that is not a sweep report is renamed ``SWEEP_ID.json.bad`` (and named in a warning),
never read again. A database that cannot be written leaves every entry in place for the next
reader. A PostgreSQL history (shared: other machines read it) is recorded directly, as is a
sweep whose session opened the store for something else (a baseline, judge checks, ``--order
failing-first``).

This module touches files only: it imports no SQLAlchemy, so a ``farm test`` that leaves its
sweep here never loads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from pathlib import Path

from pydantic import ValidationError

from farm.agents.secrets import redact, redact_value
from farm.models import SweepReport

INBOX_SUFFIX = ".inbox"
"""The inbox of ``history.sqlite`` is the directory ``history.sqlite.inbox`` beside it."""
ENTRY_SUFFIX = ".json"
BAD_SUFFIX = ".bad"
"""An entry that is not a sweep report is renamed ``….json.bad``: kept for a person, never read again."""

TEMPORARY_SUFFIX = ".tmp"
STALE_TEMPORARY_S = 3600
"""A temporary entry this old was left by a ``farm test`` killed while writing it (a write takes
milliseconds): the next reader removes it."""

_SQLITE_FILE = re.compile(r"sqlite(?:\+pysqlite)?:///(?P<path>[^?#%~][^?#%]*)")
"""A plain SQLite file URL: no query, no escapes, no ``~`` (anything else is recorded directly)."""
_ENTRY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_UNRECORDED = {"run_details"}
"""Kept runs: the history holds none of them, so the inbox holds none either (nor their answers)."""


def inbox_of(url: str) -> Path | None:
    """The inbox of the SQLite file ``url`` names; None for any other history (recorded directly)."""
    found = _SQLITE_FILE.fullmatch(url)
    if found is None or found["path"] == ":memory:" or found["path"].endswith("/"):
        return None
    database = Path(found["path"])
    return database.with_name(database.name + INBOX_SUFFIX)


def entry_name(sweep_id: str | None) -> str | None:
    """The file name of a sweep's entry; None when its id is no plain file name (recorded directly)."""
    if not sweep_id or not _ENTRY_NAME.fullmatch(sweep_id):
        return None
    return sweep_id + ENTRY_SUFFIX


def deposit(inbox: Path, name: str, report: SweepReport) -> Path:
    """Write ``report`` as the entry ``name`` (a temporary file renamed into place); OSError when the disk says no.

    Masked as every report the farm writes (its runs were masked where they ran); its kept runs
    are left out, as the history keeps none.
    """
    text = report.model_dump_json(exclude={"results": {"__all__": _UNRECORDED}})
    if redact(text) != text:  # a registered secret in it: masked value by value, so the JSON stays whole
        text = json.dumps(redact_value(json.loads(text)))
    inbox.mkdir(parents=True, exist_ok=True)
    entry = inbox / name
    temporary = inbox / f".{name}.{os.getpid()}{TEMPORARY_SUFFIX}"  # a dot name: never taken for an entry
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())  # the rename may reach the disk before the data otherwise
        os.replace(temporary, entry)
        _sync_directory(inbox)  # the rename itself reaches the disk: a power cut keeps the entry
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    return entry


def _sync_directory(directory: Path) -> None:
    """Best effort: the entry is in place whatever this says (some file systems refuse a directory's fsync)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def waiting(inbox: Path | None) -> list[Path]:
    """The entries in ``inbox`` in the order they were left (none when it does not exist).

    A temporary file a killed write left (``STALE_TEMPORARY_S`` old) is removed on the way.
    That order is the order of recording, which breaks the tie of two sweeps started in the same
    second (``HistoryStore.sweeps``: ``last`` is the one recorded last); their ids would not: they
    end in a random part.
    """
    if inbox is None:
        return []
    found: list[tuple[int, str]] = []
    stale_before_ns = time.time_ns() - STALE_TEMPORARY_S * 1_000_000_000
    try:
        with os.scandir(inbox) as listing:
            for item in listing:
                try:
                    if item.name.endswith(ENTRY_SUFFIX) and not item.name.startswith("."):
                        found.append((item.stat().st_mtime_ns, item.name))
                    elif item.name.startswith(".") and item.name.endswith(TEMPORARY_SUFFIX) \
                            and item.stat().st_mtime_ns < stale_before_ns:
                        with contextlib.suppress(OSError):  # not ours to remove: it stays, harmless
                            os.unlink(item.path)  # a write killed before its rename left it
                except FileNotFoundError:  # another reader took it
                    continue
    except OSError:
        return []
    return [inbox / name for _, name in sorted(found)]


def read_entry(entry: Path) -> SweepReport | None:
    """The report an entry holds; None when another reader took it first. ValueError: not a sweep report."""
    try:
        data = entry.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return SweepReport.model_validate_json(data)
    except ValidationError as exc:  # its first error, in one line
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"{where}: {first['msg']}" if where else first["msg"]) from None


def set_aside(entry: Path) -> Path | None:
    """Rename a bad entry ``….json.bad``; None when another reader did (or it is gone)."""
    bad = entry.with_name(entry.name + BAD_SUFFIX)
    try:
        os.replace(entry, bad)
    except FileNotFoundError:
        return None
    return bad


def remove(entry: Path) -> None:
    """The entry is recorded: remove it (another reader may have already)."""
    entry.unlink(missing_ok=True)


__all__ = ["deposit", "entry_name", "inbox_of", "read_entry", "remove", "set_aside", "waiting"]
