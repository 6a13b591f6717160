"""The quarantine entries of a prepared sweep, for its plan's envelope.

The plan carries them (``SweepEnvelope.quarantine``: case id → its entry; the report's
``metadata.quarantine``), so a detached or nightly sweep whose report a worker builds marks its
cases exactly as ``farm test`` does.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from farm.quarantine.entries import Entry, EntryIndex, read_entries
from farm.quarantine.files import any_project_file, project_file

_NONE = EntryIndex([])


@cache
def _project_entries(path: Path) -> EntryIndex:
    return EntryIndex(read_entries(path)) if path.is_file() else _NONE


def _entries_for(source: str, given: EntryIndex | None) -> EntryIndex:
    if given is not None:
        return given
    return _project_entries(project_file(Path(source))) if source else _NONE


def quarantine_plan(cases: Iterable[tuple[str, str]], sources: Sequence[str], quarantine_file: str | None,
                    warn: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """Case id → entry for the quarantined ``cases`` ((case id, its suite file), in plan order) of a
    sweep whose suite was read from ``sources`` (each case with its own
    project's file, or every case with ``--quarantine FILE``); InputError on a bad file. ``warn``
    hears of an entry that names no case while a case id is close to it (a typo)."""
    _project_entries.cache_clear()  # a file edited between two sweeps of one process is read again
    given = EntryIndex(read_entries(Path(quarantine_file))) if quarantine_file else None
    found: dict[str, dict[str, Any]] = {}
    if given is None and not any_project_file(sources):
        return found  # no file: the cases are not decoded for nothing
    indexes: dict[int, EntryIndex] = {}
    matched: set[int] = set()
    ids: list[str] = []
    for case_id, source in cases:
        index = _entries_for(source, given)
        indexes[id(index)] = index
        ids.append(case_id)
        entry = index.first(case_id)
        if entry is not None:
            found[case_id] = entry.describe()
            matched.add(id(entry))
    if warn is not None:
        for index in indexes.values():
            for line in _typos([e for e in index.entries if id(e) not in matched], ids):
                warn(line)
    return found


def _typos(unmatched: list[Entry], ids: list[str]) -> list[str]:
    """An entry naming no case whose ``case`` (not a glob) is close to a case id: a typo, said at once
    (``farm quarantine review`` says "names no case" too, but later)."""
    lines = []
    for entry in unmatched:
        if any(ch in entry.case for ch in "*?["):
            continue
        close = difflib.get_close_matches(entry.case, ids, n=1, cutoff=0.8)
        if close:
            lines.append(f"{entry.file}:{entry.line}: quarantine case {entry.case!r} names no case of this sweep; "
                         f"did you mean {close[0]!r}?")
    return lines
