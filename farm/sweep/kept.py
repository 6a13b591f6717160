"""A finished sweep's index, kept beside its run journal, so ``farm view`` pages the sweep without
replaying the journal (issue 45: a 30,000-case replay takes minutes; reading its index's table
part, a fraction of a second).

Written once, when the sweep ends (``RunJournal.on_finish``, the same for both executors), as
``<sweep id>.jsonl.index``, to a temporary name then renamed (a reader never sees half of one):

    one line a case, in report order: its statistics' JSON without the kept runs
    the report without its results
    the table: each case in brief (``CaseBrief``), where its ``result`` lines start in the journal,
              where its own line starts here
    the header: the format, the sweep's id, the journal's size, where the report's line starts

The reader reads the header, the report and the table; a case's line and its runs only for the
cases a page shows. It holds what ``farm report JOURNAL`` rebuilds (``farm.sweep.replay``): up to
``DEFAULT_MAX_RUN_DETAILS`` runs a case, whatever the sweep itself kept for its ``-o`` files.

An index whose journal is not the size it recorded any more (appended to, replaced, cut short) or
that names another sweep is not used; nor is one unreadable. A journal without an index (a sweep
killed before its end, one written before indexes were) is replayed, as before.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_core import from_json

from farm.models import CaseStats, SweepReport
from farm.models.brief import CaseBrief
from farm.stats import DEFAULT_MAX_RUN_DETAILS
from farm.stats.accumulator import kept_details
from farm.sweep.journal_lines import runs_at

__all__ = ["INDEX_SUFFIX", "KeptSweep", "index_path", "keep_index", "read_index"]

INDEX_SUFFIX = ".index"
"""A finished journal's index: ``<sweep id>.jsonl.index``, beside it."""
FORMAT = 2
_TAIL = 4096
"""Bytes read from the index's end to find its header (a few hundred)."""


def index_path(journal: Path) -> Path:
    return journal.with_name(journal.name + INDEX_SUFFIX)


def keep_index(journal: Path, report: SweepReport, offsets: Mapping[str, array[int]], journal_bytes: int) -> None:
    """Write the index of ``journal``, which ends with ``report``'s summary at ``journal_bytes``;
    ``offsets``: each case's ``result`` lines in it. A failure to write it costs nothing but the
    view's speed: the journal is replayed instead."""
    target = index_path(journal)
    part = target.with_name(f"{target.name}.{os.getpid()}.part")
    table: dict[str, list[Any]] = {"brief": [], "runs": [], "lines": []}
    try:
        with part.open("wb") as out:
            for case in report.results:
                table["brief"].append(CaseBrief.of(case))
                table["runs"].append(list(offsets.get(case.planned_id, ())))
                table["lines"].append(out.tell())
                out.write(case.model_dump_json(exclude={"run_details"}).encode() + b"\n")
            report_at = out.tell()
            out.write(report.model_copy(update={"results": []}).model_dump_json().encode() + b"\n")
            out.write(json.dumps(table, separators=(",", ":")).encode() + b"\n")
            header = {"format": FORMAT, "sweep_id": report.envelope.sweep_id, "journal_bytes": journal_bytes,
                      "cases": len(report.results), "report_at": report_at}
            out.write(json.dumps(header).encode() + b"\n")
        os.replace(part, target)
    except OSError:
        part.unlink(missing_ok=True)


@dataclass(frozen=True)
class KeptSweep:
    """The report an index holds (without its results), every case in brief, and each case whole
    when asked (``cases``)."""

    report: SweepReport
    briefs: list[CaseBrief]
    journal: Path
    _runs: list[list[int]]
    _lines: list[int]

    def cases(self, ats: Iterable[int]) -> Iterator[CaseStats]:
        """The report's cases at ``ats`` (from 0) whole, each with its kept runs read from the journal."""
        with index_path(self.journal).open("rb") as index, self.journal.open("rb") as journal:
            for at in ats:
                index.seek(self._lines[at])
                case = CaseStats.model_validate_json(index.readline())
                details = kept_details(runs_at(journal, self._runs[at]), DEFAULT_MAX_RUN_DETAILS)
                # the runs a replay keeps (farm.sweep.replay), whatever the sweep kept for its -o files
                yield case.model_copy(update={"run_details": details,
                                              "run_details_truncated": max(0, case.runs - DEFAULT_MAX_RUN_DETAILS)})


def read_index(journal: Path, sweep_id: str) -> KeptSweep | None:
    """The index of the journal of sweep ``sweep_id``; None when there is none, it is unreadable,
    or it is stale (the journal's size is not the one it recorded, or its sweep is another)."""
    if index_path(journal).is_symlink():  # as the journal itself (farm.view.data): a file of its own
        return None
    try:
        with index_path(journal).open("rb") as index:
            size = index.seek(0, os.SEEK_END)
            index.seek(max(0, size - _TAIL))
            header = json.loads(index.read().rstrip(b"\n").rpartition(b"\n")[2])
            if (not isinstance(header, dict) or header.get("format") != FORMAT or header.get("sweep_id") != sweep_id
                    or header.get("journal_bytes") != journal.stat().st_size):
                return None
            index.seek(header["report_at"])
            report = SweepReport.model_validate_json(index.readline())
            table = from_json(index.readline())  # pydantic's parser: twice as fast as json's on 30,000 cases
        briefs = list(map(CaseBrief._make, table["brief"]))
    except (OSError, ValueError, KeyError, TypeError):  # pydantic's ValidationError is a ValueError
        return None
    if len(briefs) != header["cases"] or report.envelope.sweep_id != sweep_id or report.results:
        return None
    return KeptSweep(report, briefs, journal, table["runs"], table["lines"])
