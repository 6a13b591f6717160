"""A large suite read and planned by several processes, one per core.

Reading a case costs ~40 µs of CPU (JSON, the checks of ``farm.suites.jsonl``, its models, its
plan): a million cases are 40 s on one core. When the plan keeps only ids (``--collect-only``)
or stored strings (a distributed submitter), what a batch leaves is small and cheap to send
back, so forked processes read the suite's batches (``CaseStream.read_batches``: file ``f``'s
batch ``b`` goes to process ``(f + b) mod N``), plan them with a copy of the sweep's
``BatchPlanner``, and return each ``BatchPlan`` with the batch's ids, problems and notes. This
process then takes the batches in suite order, exactly as it would have read them: duplicate
ids, the order of problems, the first error, the selection counts and totals come out the
same. An in-process sweep keeps its ``PlannedCase`` objects (it runs them) and reads alone.

For a compact plan this process plans the first batch itself before forking: the plan's
dictionary is its first case, and every process must encode with it.

``FARM_LOAD_PROCESSES``: how many processes (default: the cores this process may use; 1: read
alone). Suites under ``PARALLEL_MIN_BYTES`` are read alone (forking costs more than it saves).
Needs ``fork`` (Linux); elsewhere the suite is read in this process.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from dataclasses import dataclass

from farm.batch_plan import BatchPlan, BatchPlanner, PlanParts
from farm.errors import SettingsError
from farm.suites import CaseStream
from farm.suites.discover import StreamBatch, skip_note

PARALLEL_MIN_BYTES = 8 << 20
"""Suites smaller than this (~80,000 one-line cases) are read by one process."""
ENV_VAR = "FARM_LOAD_PROCESSES"


def load_processes(stream: CaseStream) -> int:
    """How many processes should read ``stream`` (1: this one alone)."""
    raw = os.environ.get(ENV_VAR, "").strip()
    if raw:
        try:
            wanted = int(raw)
        except ValueError:
            wanted = 0
        if wanted < 1:
            raise SettingsError(f"{ENV_VAR}={raw!r}: expected a whole number of processes, at least 1")
    else:
        wanted = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if wanted < 2 or stream.kind == "message" or not sys.platform.startswith("linux"):
        return 1
    size = sum(_size(path) for path in stream.files)
    return wanted if size >= PARALLEL_MIN_BYTES else 1


def _size(path: os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # the reader reports it


@dataclass
class LoadedBatch:
    """A batch read and planned in another process: all it sends back."""

    batch: StreamBatch
    """Its problems and notes (its cases stay where they were read)."""
    ids: list[str]
    lines: list[int | None]
    skip_notes: list[str]
    plan: BatchPlan


_FORKED: tuple[CaseStream, BatchPlanner, int, int, bool] | None = None
"""What the forked processes inherit (set just before forking)."""


def plan_in_processes(stream: CaseStream, planner: BatchPlanner, parts: PlanParts, size: int,
                      processes: int) -> None:
    """Read and plan every batch of ``stream`` into ``parts``, the first here and the others in
    ``processes`` forked processes; then take them in suite order."""
    first_here = parts.keeps == "compact"  # a compact plan's dictionary is its first case
    if first_here:
        first = next(stream.read_batches(size, lambda f, b: True if (f, b) == (0, 0) else None), None)
        if first is not None:
            _merge(stream, parts, planner.plan(stream.take(first)))
        if not getattr(parts.cases, "has_dictionary", False):
            processes = 1  # the first batch planned no case: this process reads on, alone
    global _FORKED
    _FORKED = (stream, planner, size, processes, first_here)
    try:
        if processes == 1:
            loaded = _load_part(0)
        else:
            with multiprocessing.get_context("fork").Pool(processes) as pool:
                loaded = [batch for part in pool.map(_load_part, range(processes)) for batch in part]
    finally:
        _FORKED = None
    loaded.sort(key=lambda one: (one.batch.file, one.batch.number))
    for one in loaded:
        stream.take_ids(one.batch, one.ids, one.lines, one.skip_notes)
        _merge(stream, parts, one.plan)
    stream.finish()


def _merge(stream: CaseStream, parts: PlanParts, plan: BatchPlan) -> None:
    parts.count(plan)
    if not stream.broken:  # a suite with problems is read on only to list them all
        parts.merge(plan)


def _load_part(part: int) -> list[LoadedBatch]:
    assert _FORKED is not None
    stream, planner, size, processes, first_done = _FORKED
    loaded = []
    for batch in stream.read_batches(size, lambda f, b: (f + b) % processes == part
                                     and not (first_done and (f, b) == (0, 0))):
        cases, batch.cases = batch.cases, []
        loaded.append(LoadedBatch(batch, [c.id for c in cases], [c.line for c in cases],
                                  [skip_note(c) for c in cases if c.skip_reason], planner.plan(cases)))
    return loaded


__all__ = ["ENV_VAR", "PARALLEL_MIN_BYTES", "LoadedBatch", "load_processes", "plan_in_processes"]
