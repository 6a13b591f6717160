"""Reading a run journal line by line, keeping count of the lines that could not be read.

A journal is written by a process that may die mid-line, on a disk that may fill up, and
people open it in editors. A bad line (not JSON, not an object, a result that does not
validate) costs that line, never the journal: it is skipped, counted and reported
(``farm report`` says how many and the first; the report's ``metadata.journal_bad_lines``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pydantic_core import from_json

from farm.models import RunResult
from farm.models.envelope import BadLines


class JournalLines:
    """The events of a journal file, iterated once; ``bad`` lists each unreadable line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bad: list[str] = []
        self._events = self._read()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._events

    def __next__(self) -> dict[str, Any]:
        return next(self._events)

    def _read(self) -> Iterator[dict[str, Any]]:
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    cut = "" if line.endswith("\n") else " (cut off: its writer stopped mid-line)"
                    self.note_bad(number, f"not JSON{cut}")
                    continue
                if not isinstance(event, dict):
                    self.note_bad(number, f"a JSON {type(event).__name__}, not an object")
                    continue
                event["_line"] = number
                yield event

    def note_bad(self, line: int | None, problem: str) -> None:
        self.bad.append(f"line {line}: {problem}" if line else problem)

    def summary(self) -> BadLines | None:
        """The report's ``metadata.journal_bad_lines``, or None when every line was read."""
        return BadLines(count=len(self.bad), first=self.bad[0]) if self.bad else None


def runs_at(journal: BinaryIO, offsets: Iterable[int]) -> Iterator[RunResult]:
    """The runs whose ``result`` lines start at ``offsets`` of the open journal, in that order."""
    for offset in offsets:
        journal.seek(offset)
        yield RunResult.model_validate(from_json(journal.readline())["run_result"])  # twice json's speed


__all__ = ["JournalLines", "runs_at"]
