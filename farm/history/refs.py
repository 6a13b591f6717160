"""BASE and HEAD of ``farm compare``: what a reference names, resolved to a comparable sweep.

A reference is, in this order: a JSON report file (a path: ends in ``.json`` or holds a path
separator; no database needed), ``last`` / ``last~N`` (N sweeps before the newest) /
``last:KEY=VALUE`` (the newest with that tag), a baseline name, or a sweep id (or a prefix of
exactly one). The store is opened only when a reference needs it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from farm.errors import InputError
from farm.matrix.arms import NAME
from farm.matrix.split import arm_reports
from farm.reports.json_report import parse_json_report
from farm.stats.compare import SweepSnapshot, snapshot_of
from farm.textfiles import read_utf8_bytes
from farm.wording import plural

if TYPE_CHECKING:  # SQLAlchemy is imported when a reference needs the store, not for two report files
    from farm.history.store import HistoryStore
    from farm.history.sweep_info import SweepInfo

LAST = re.compile(r"^last(?::(?P<key>[^=~]+)=(?P<value>[^~]*))?(?:~(?P<skip>\d+))?$")

MAX_SKIP = 2**31 - 1
"""``last~N`` beyond this names no sweep (and would overflow the database's integer)."""


@dataclass(frozen=True)
class Resolved:
    """A side of a comparison: its snapshot, and its recorded sweep (None for a report file)."""

    snapshot: SweepSnapshot
    info: SweepInfo | None


def is_report_path(ref: str) -> bool:
    return ref.lower().endswith(".json") or os.sep in ref or "/" in ref or _arm_of_file(ref) is not None


def _arm_of_file(ref: str) -> tuple[str, str] | None:
    """``report.json:ARM``: a matrix report's file and one of its arms (SPEC 22)."""
    path, sep, arm = ref.rpartition(":")
    return (path, arm) if sep and path.lower().endswith(".json") and NAME.fullmatch(arm) else None


def read_report_file(ref: str, role: str) -> SweepSnapshot:
    path, arm = _arm_of_file(ref) or (ref, None)
    report = parse_json_report(read_utf8_bytes(Path(path).expanduser(), f"{role} {path}"), source=path, details=False)
    if report.arms is None:
        if arm is not None:
            raise InputError(f"{role} {ref}: {path} is not a matrix report (it has no arms)")
        return snapshot_of(report)
    names = [a.name for a in report.arms]
    if arm not in names:  # a matrix report holds each case once per arm: compare one arm
        raise InputError(f"{role} {ref}: a matrix report: name an arm, {path}:ARM (arms: {', '.join(names)})")
    return snapshot_of(arm_reports(report)[names.index(arm)])  # in the arms' order


class RefResolver:
    """Resolves references, opening the history store on first need (``open_store``)."""

    def __init__(self, open_store: Callable[[], HistoryStore]) -> None:
        self._open_store = open_store
        self._store: HistoryStore | None = None

    @property
    def store(self) -> HistoryStore:
        if self._store is None:
            self._store = self._open_store()
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def resolve(self, ref: str, role: str = "BASE") -> Resolved:
        """The sweep ``ref`` names; InputError (exit 2) when it names none."""
        if is_report_path(ref):
            return Resolved(read_report_file(ref, role), None)
        info = self.find(ref)
        if info is None:
            raise InputError(f"{role} {ref!r}: no recorded sweep, baseline or JSON report by that name "
                             f"({plural(self.store.count(), 'sweep')} recorded)")
        return Resolved(self.store.snapshot(info), info)

    def find(self, ref: str) -> SweepInfo | None:
        """The recorded sweep ``ref`` names (``last…``, a baseline, a sweep id or prefix), if any."""
        last = LAST.match(ref)
        if last:
            tag = (last["key"], last["value"]) if last["key"] is not None else None
            skip = int(last["skip"] or 0)
            return self.store.latest(tag=tag, skip=skip) if skip <= MAX_SKIP else None
        return self.store.baseline(ref) or self.store.sweep(ref)
