"""The run journal: every completed run of a ``farm test`` sweep, on disk as soon as it completes.

Whatever ``-o`` says, each sweep appends its events to ``$FARM_DATA_DIR/journals/<sweep id>.jsonl``
and flushes every line, so no failure after the sweep (a full disk, a bad path, a crash, a
kill, a second Ctrl-C) loses a paid run: ``farm report JOURNAL -o FILE…`` renders any format
from it, complete or partial (``farm.sweep.replay``). Journals older than ``FARM_JOURNAL_DAYS`` are
pruned when a sweep starts (SPEC 10).

A journal is the JSONL stream of SPEC 8 (``start``, ``result`` per run, ``stability`` per case,
``summary`` with the report's metadata), plus what makes it self-contained:

    plan      the sweep's plan (settings and every planned case), right after ``start``
    result    each carries ``run_result``: the full ``RunResult``, so a replay counts exactly
              what the sweep counted (the Yao fields beside it are for people and ``jq``)

The JSONL writer and the plan model are the ones reports and Redis use: no second codec.

Flat memory for big JSON/HTML/Markdown/JUnit reports (issue 16) builds on this: every run is
already here in full, in completion order. While writing, the journal records the byte offset of
each ``result`` line per case (8 bytes a run); ``JournalDetails`` reads one case's runs back and
keeps, in the same order, what a ``CaseAccumulator`` with the sweep's ``max_run_details`` keeps
(``kept_details``): exactly the details the sweep's own accumulator kept. The in-process executor
then drops each finished case's details (``journal_for``) and the report's renderers ask for them
one case at a time (``farm.reports.details``). When the sweep ends, those offsets and the report go
into the journal's index beside it (``farm.sweep.kept``), from which ``farm view`` pages the sweep.
"""

from __future__ import annotations

import os
import socket
import time
import weakref
from array import array
from pathlib import Path
from typing import TextIO

from farm.errors import SettingsError
from farm.models import CaseStats, RunDetail, RunResult, SweepReport, SweepStart
from farm.plan.sweep_plan import SweepPlan
from farm.reports.jsonl import EventLines, JsonlWriter
from farm.stats.accumulator import kept_details
from farm.sweep.journal_lines import runs_at
from farm.sweep.kept import index_path, keep_index

JOURNAL_DIR = "journals"
"""Under the data directory (``FARM_DATA_DIR``)."""
JOURNAL_SUFFIX = ".jsonl"


def journal_dir(data_dir: Path) -> Path:
    return data_dir / JOURNAL_DIR


def journal_path(data_dir: Path, sweep_id: str) -> Path:
    return journal_dir(data_dir) / f"{sweep_id}{JOURNAL_SUFFIX}"


def prune_journals(data_dir: Path, days: int, *, now: float | None = None) -> list[Path]:
    """Delete journals not written to for ``days`` days; returns what was deleted."""
    cutoff = (time.time() if now is None else now) - days * 86400
    pruned = []
    directory = journal_dir(data_dir)
    for path in directory.glob(f"*{JOURNAL_SUFFIX}") if directory.is_dir() else ():
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                index_path(path).unlink(missing_ok=True)
                pruned.append(path)
        except FileNotFoundError:  # another farm pruned it first
            continue
    return pruned


def open_journal(data_dir: Path, sweep_id: str) -> TextIO:
    """Create the sweep's journal; SettingsError (exit 2, before any run) when it cannot be."""
    path = journal_path(data_dir, sweep_id)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("x", encoding="utf-8")
    except OSError as exc:
        raise SettingsError(f"cannot write the run journal {path}: {exc.strerror or exc} "
                            "(set FARM_DATA_DIR to a writable directory)") from None


class JournalDetails:
    """A case's kept run details, read back from the journal (a ``RunDetailsSource``)."""

    def __init__(self, path: Path, max_details: int) -> None:
        self.path = path
        self.max_details = max_details
        self.offsets: dict[str, array[int]] = {}
        """Per case, where each of its ``result`` lines starts, in completion order."""

    def __call__(self, stats: CaseStats) -> list[RunDetail]:
        with self.path.open("rb") as journal:
            return kept_details(runs_at(journal, self.offsets.get(stats.planned_id, ())), self.max_details)


_OPEN: weakref.WeakValueDictionary[str, JournalDetails] = weakref.WeakValueDictionary()


def journal_for(sweep_id: str) -> JournalDetails | None:
    """The details source of the sweep's journal while its ``RunJournal`` (or a report using it) lives."""
    return _OPEN.get(sweep_id)


class RunJournal:
    """A sweep observer writing the journal; each line is flushed as it is written."""

    durable = True
    """Its failure stops the sweep with what ran (``farm.sweep.observers.Observers``)."""

    def __init__(self, stream: TextIO, plan: SweepPlan) -> None:
        self._writer = JsonlWriter(stream)
        self.lines: EventLines = self._writer.lines
        """The lines it makes, for the sweep's ``-o`` streams to share (``JsonlObserver``)."""
        self._stream = stream
        self._plan = plan
        self.path = Path(stream.name) if isinstance(getattr(stream, "name", None), str) else None
        self.details: JournalDetails | None = None
        """Each case's runs in the journal, and its kept runs read back (a file journal only)."""
        if self.path is not None and stream.seekable():
            self.details = JournalDetails(self.path.resolve(), plan.max_run_details)
            if plan.max_run_details > 0:
                _OPEN[plan.sweep_id] = self.details

    def on_start(self, start: SweepStart) -> None:
        self._writer.start(timestamp=start.timestamp, agent_id=start.agent_id, total_cases=start.total_cases,
                           total_runs=start.total_runs, sweep_id=start.sweep_id)
        self._writer.write_array({"type": "plan", "pid": os.getpid(), "host": socket.gethostname(),
                                  "plan": self._plan.model_dump(mode="json")},
                                 "cases", self._plan.cases.json_texts())

    def on_result(self, result: RunResult) -> None:
        if self.details is not None:
            offsets = self.details.offsets.get(result.case_id)
            if offsets is None:
                offsets = self.details.offsets[result.case_id] = array("q")
            offsets.append(self._stream.tell())
        # pydantic's own JSON of the run, spliced in: a third of the cost of dumping it as a dict
        self._writer.write(self.lines.result(result), raw={"run_result": result.model_dump_json(exclude_defaults=True)})

    def on_case(self, stats: CaseStats) -> None:
        self._writer.stability(stats)

    def on_finish(self, report: SweepReport) -> None:
        self._writer.summary(report)
        if self.details is not None:  # what farm view pages the sweep from (farm.sweep.kept)
            keep_index(self.details.path, report, self.details.offsets, self._stream.tell())


__all__ = [
    "JOURNAL_DIR",
    "JournalDetails",
    "RunJournal",
    "journal_dir",
    "journal_for",
    "journal_path",
    "open_journal",
    "prune_journals",
]
