"""``farm-quarantine.toml``: read, check and match its ``[[quarantine]]`` entries.

Each entry: ``case`` (matched as ``-k`` matches: a substring, or a glob when it has ``*?[``),
``owner``, ``reason`` and ``until`` (a UTC date, inclusive). A bad entry is bad input (exit 2)
naming the file and line: ``tomllib`` gives no positions for values, so the line is found in the
text (the entry's ``[[quarantine]]`` header, or the line of the offending key).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from farm.errors import InputError
from farm.plan.batch import matches_pattern as matches_like_k
from farm.textfiles import read_utf8

KEYS = ("case", "owner", "reason", "until")
REQUIRED = ("case", "owner", "until")
_HEADER = re.compile(r"^\s*\[\[\s*quarantine\s*\]\]")
_GLOB = "*?["


@dataclass(frozen=True)
class Entry:
    """One ``[[quarantine]]`` entry, with where it was written."""

    case: str
    owner: str
    reason: str
    until: str
    """ISO date (``2026-12-31``): the last day the quarantine holds (UTC)."""
    file: str
    line: int

    def matches(self, case_id: str) -> bool:
        return matches_like_k(case_id, self.case)

    def expired(self, today: dt.date) -> bool:
        return dt.date.fromisoformat(self.until) < today

    def describe(self) -> dict[str, Any]:
        return asdict(self)

    def matches_every_case(self) -> bool:
        """A pattern of only ``*``: it quarantines every case there is."""
        return set(self.case) == {"*"}


def _lines(text: str) -> tuple[list[str], list[int]]:
    lines = text.splitlines()
    return lines, [i + 1 for i, line in enumerate(lines) if _HEADER.match(line)]


def _key_line(lines: list[str], start: int, end: int, key: str) -> int:
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for number in range(start, min(end, len(lines) + 1)):
        if pattern.match(lines[number - 1]):
            return number
    return start


def _top_line(lines: list[str], key: str) -> int:
    """The line defining a top-level key or table (``key = …``, ``[key]``, ``[[key]]``), else 1."""
    pattern = re.compile(rf"^\s*(\[\[?\s*{re.escape(key)}\s*[\].]|[\"']?{re.escape(key)}[\"']?\s*=)")
    return next((i + 1 for i, line in enumerate(lines) if pattern.match(line)), 1)


def _until(value: Any) -> str | None:
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            return None
    return None


def _entry(raw: Any, path: Path, lines: list[str], start: int, end: int) -> Entry:
    where = f"{path}:{start}"
    if not isinstance(raw, dict):
        raise InputError(f"{where}: a [[quarantine]] entry must be a table")
    unknown = [k for k in raw if k not in KEYS]
    if unknown:
        line = _key_line(lines, start, end, unknown[0])
        raise InputError(f"{path}:{line}: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    for key in REQUIRED:
        if key not in raw or (isinstance(raw[key], str) and not raw[key].strip()):
            raise InputError(f"{where}: entry has no {key!r}")
    for key in ("case", "owner", "reason"):
        if key in raw and not isinstance(raw[key], str):
            raise InputError(f"{path}:{_key_line(lines, start, end, key)}: {key!r} must be a string")
    until = _until(raw["until"])
    if until is None:
        line = _key_line(lines, start, end, "until")
        raise InputError(f"{path}:{line}: until {raw['until']!r} is not a date (YYYY-MM-DD)")
    return Entry(case=raw["case"], owner=raw["owner"], reason=str(raw.get("reason", "")), until=until,
                 file=str(path), line=start)


def parse_entries(text: str, path: Path) -> list[Entry]:
    """The entries of a quarantine file's text; InputError (exit 2) naming the line of a bad one."""
    import tomllib  # here: a sweep without a quarantine file never parses TOML

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: {exc}") from None
    lines, headers = _lines(text)
    unknown = [k for k in document if k != "quarantine"]
    if unknown:
        raise InputError(f"{path}:{_top_line(lines, unknown[0])}: unknown table or key {unknown[0]!r} "
                         "(only [[quarantine]] entries)")
    raw = document.get("quarantine", [])
    if not isinstance(raw, list):
        raise InputError(f"{path}:{_top_line(lines, 'quarantine')}: 'quarantine' must be [[quarantine]] entries")
    entries = []
    for i, item in enumerate(raw):
        start = headers[i] if i < len(headers) else 1
        end = headers[i + 1] if i + 1 < len(headers) else len(lines) + 1
        entries.append(_entry(item, path, lines, start, end))
    return entries


def read_entries(path: Path) -> list[Entry]:
    return parse_entries(read_utf8(path, str(path), kind="a farm-quarantine.toml", noun="it"), path)


class EntryIndex:
    """A file's entries, indexed so that a case id finds the entries matching it without trying
    each one (100,000 entries against 1,000 cases took 52 s tried one by one). Exactly
    ``Entry.matches``: a substring pattern is looked up by each window of the id as long as the
    pattern; a glob (matched against the whole id) is tried only when the literal text before its
    first wildcard starts the id."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.entries = list(entries)
        self._substrings: dict[int, dict[str, list[int]]] = {}
        self._globs: dict[str, list[tuple[int, str]]] = {}
        for i, entry in enumerate(self.entries):
            pattern = entry.case
            cut = min((pattern.index(ch) for ch in _GLOB if ch in pattern), default=None)
            if cut is None:
                self._substrings.setdefault(len(pattern), {}).setdefault(pattern, []).append(i)
            else:
                self._globs.setdefault(pattern[:cut], []).append((i, pattern))

    def matching(self, case_id: str) -> list[Entry]:
        """Every entry matching ``case_id``, in the file's order."""
        found: set[int] = set()
        for length, patterns in self._substrings.items():
            for start in range(len(case_id) - length + 1):
                found.update(patterns.get(case_id[start:start + length], ()))
        for end in range(len(case_id) + 1):
            found.update(i for i, glob in self._globs.get(case_id[:end], ()) if fnmatch.fnmatchcase(case_id, glob))
        return [self.entries[i] for i in sorted(found)]

    def first(self, case_id: str) -> Entry | None:
        """The first entry of the file matching ``case_id`` (it is the one that applies)."""
        found = self.matching(case_id)
        return found[0] if found else None
