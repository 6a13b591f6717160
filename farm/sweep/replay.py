"""Reports rebuilt after the fact from a run journal.

``farm report`` renders any format from one, complete or partial (a distributed sweep's report so
far is rebuilt from its store with the same ``case_statistics``: ``farm.distributed.delivery.close``).
The statistics are rebuilt with the accumulator the sweep itself used, from the runs it recorded, and the report
is finished by ``farm.sweep.lifecycle.finish_sweep``, so a rebuilt report reads like the live one.
A complete journal ends with the sweep's own metadata (``status``, ``stopped``, ``not_run``), which
the rebuilt report keeps; a journal that stops short (the process was killed, crashed, was
interrupted twice, or is still running) is reported as ``running`` when the process that writes it
is alive on this machine, else ``abandoned``; either way every recorded run is in it.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from farm.errors import InputError
from farm.models import CaseStats, RunResult, SweepEnvelope, SweepOutcome, SweepReport
from farm.models.outcome import split_outcome
from farm.plan.sweep_plan import PlannedCase, PlannedCases, SweepPlan
from farm.stats import DEFAULT_MAX_RUN_DETAILS, CaseAccumulator
from farm.stats.ramp import RampTally
from farm.sweep.journal_lines import JournalLines
from farm.sweep.lifecycle import SweepStatus, finish_sweep


def case_statistics(cases: Iterable[PlannedCase], results: Iterable[RunResult], *,
                    semantic: bool = True, every_run: bool = False,
                    ramp: RampTally | None = None) -> dict[str, CaseStats]:
    """Statistics of every case with at least one run among ``results`` (each run counted once);
    ``semantic``: the plan's ``semantic``; ``every_run``: every run in ``run_details``, not the
    report's first ``DEFAULT_MAX_RUN_DETAILS`` (``farm judge-check`` judges every output again);
    ``ramp``: told each counted run (``--ramp``)."""
    accumulators = {c.id: CaseAccumulator(c.case, c.plan, semantic=semantic,
                                          max_details=c.plan.runs if every_run else DEFAULT_MAX_RUN_DETAILS)
                    for c in cases}
    for result in results:
        acc = accumulators.get(result.case_id)
        if acc is None:
            raise InputError(f"run {result.run} of case {result.case_id!r} belongs to no planned case")
        if acc.add(result) and ramp is not None:
            ramp.add(result, acc.plan.runs)
    return {cid: acc.stats() for cid, acc in accumulators.items() if acc.count}


class _Journal:
    """What a journal file holds, read in one pass (results are streamed, not kept)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events = JournalLines(path)
        self.start: dict[str, Any] = {}
        self.plan_event: dict[str, Any] = {}
        self.summary: dict[str, Any] | None = None

    def read_head(self) -> SweepPlan:
        for event in self.events:
            if event.get("type") == "start":
                self.start = event
            elif event.get("type") == "plan":
                self.plan_event = event
                return SweepPlan.model_validate({**event["plan"], "cases": PlannedCases(
                    PlannedCase.model_validate(c) for c in event.get("cases", []))})
        unread = f"; {self.events.bad[0]}" if self.events.bad else ""
        raise InputError(f"{self.path}: not a farm run journal (no plan line{unread}; journals live under "
                         "$FARM_DATA_DIR/journals/)")

    def results(self) -> Iterator[RunResult]:
        for event in self.events:
            if event.get("type") == "result" and "run_result" in event:
                try:
                    yield RunResult.model_validate(event["run_result"])
                except ValueError as exc:  # pydantic's ValidationError: this run is lost, the others are not
                    self.events.note_bad(event.get("_line"), f"a result that does not validate ({_first(exc)})")
            elif event.get("type") == "summary":
                self.summary = event


def report_from_journal(path: str | Path, *, every_run: bool = False) -> SweepReport:
    """The report of the sweep a journal recorded, complete or partial; ``every_run``: with every
    run's details and no semantic figures (``case_statistics``)."""
    journal = _Journal(Path(path))
    try:
        plan = journal.read_head()
        ramp = RampTally(plan.ramp) if plan.ramp else None
        stats = case_statistics(plan.cases, journal.results(), semantic=plan.semantic and not every_run,
                                every_run=every_run, ramp=ramp)
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        raise InputError(f"{path}: not a readable farm run journal: {exc}") from None
    report = _report(journal, plan, stats, path)
    if ramp is not None:
        report.summary.ramp = ramp.figures(plan.runs_per_case // len(ramp.levels))
    return report


def _report(journal: _Journal, plan: SweepPlan, stats: dict[str, CaseStats], path: str | Path) -> SweepReport:
    """The report of the journal's cases: the sweep's own account when it finished, else running
    or abandoned."""
    started_at = str(journal.start.get("timestamp") or plan.started_at)
    if journal.summary is not None:
        meta, recorded = split_outcome(journal.summary.get("metadata") or {})
        told = SweepOutcome.model_validate(recorded)
        report = finish_sweep(plan, stats, case_ids=plan.case_ids, started_at=started_at,
                              duration_ms=float(journal.summary.get("duration_ms") or 0.0),
                              stopped=told.stopped, status=told.status or SweepStatus.COMPLETE, reason=told.reason,
                              budget=told.budget)
        # the sweep's own account: completed_at, not_run, …
        outcome = SweepOutcome.model_validate(report.outcome.model_dump(exclude_none=True) | recorded)
        user, envelope = SweepEnvelope.split(report.envelope.written() | meta)  # the journal's keys win
        return _with_bad_lines(report.model_copy(update={
            "metadata": report.metadata | user, "envelope": SweepEnvelope.model_validate(envelope),
            "outcome": outcome}), journal)
    alive = _writer_alive(journal.plan_event)
    duration = (Path(path).stat().st_mtime - _epoch(started_at)) * 1000
    return _with_bad_lines(finish_sweep(
        plan, stats, case_ids=plan.case_ids, started_at=started_at, duration_ms=max(duration, 0.0),
        status=SweepStatus.RUNNING if alive else SweepStatus.ABANDONED,
        reason=None if alive else "the journal ends before the sweep finished: its process was killed, crashed "
                                  "or was interrupted twice; the report holds every run it recorded",
    ), journal)


def _with_bad_lines(report: SweepReport, journal: _Journal) -> SweepReport:
    bad = journal.events.summary()
    if bad is None:
        return report
    return report.model_copy(update={"envelope": report.envelope.updated(journal_bad_lines=bad)})


def _first(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return " ".join(lines[:3]) if lines else type(exc).__name__


def _writer_alive(plan_event: dict[str, Any]) -> bool:
    """The process that writes the journal still runs on this machine."""
    pid = plan_event.get("pid")
    if not isinstance(pid, int) or plan_event.get("host") != socket.gethostname() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _epoch(timestamp: str) -> float:
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time()


__all__ = ["case_statistics", "report_from_journal"]
