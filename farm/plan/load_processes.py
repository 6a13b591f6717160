"""A large suite read and planned by several processes, one per core.

Reading a case costs ~40 µs of CPU (JSON, the checks of ``farm.suites.jsonl``, its models, its
plan): a million cases are 40 s on one core. When the plan keeps only ids (``--collect-only``)
or stored strings (a distributed submitter), what a batch leaves is small and cheap to send
back, so forked processes read the suite's batches (``CaseStream.read_batches``: file ``f``'s
batch ``b`` goes to process ``(f + b) mod N``), plan them with a copy of the sweep's
``BatchPlanner``, and send each ``BatchPlan`` with the batch's ids, problems and notes over a
queue as it is done (a listing's plain cases are never built: ``BatchPlanner.plan_listed``).
This process takes the batches in suite order as they come, exactly as
it would have read them: duplicate ids, the order of problems, the first error, the selection
counts and totals come out the same. An in-process sweep keeps its ``PlannedCase`` objects
(it runs them) and reads alone.

For a compact plan this process plans the first batch itself before forking: the plan's
dictionary is its first case, and every process must encode with it.

``FARM_LOAD_PROCESSES``: how many processes (default: the cores this process may use for
``--collect-only``, at most ``SUBMIT_READERS`` for a distributed submit; 1: read alone). A
submit's readers add their own memory to the plan it holds: a million cases, 2026-11-26, tree
RSS 327 MB read alone, 365 MB with two readers (~50 MB each), stored at 49k and 80k runs/s; the
issue bounds the submitter's tree at 500 MB, so the default stops at two whatever the cores.
Suites under ``PARALLEL_MIN_BYTES`` are read alone (forking costs more than it saves). Needs
``fork`` (Linux); elsewhere the suite is read in this process.
"""

from __future__ import annotations

import heapq
import itertools
import operator
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from queue import Empty
from typing import TYPE_CHECKING

from farm.errors import FarmRuntimeError
from farm.models import Case
from farm.plan.batch import BatchPlan, BatchPlanner, PlanParts, ReadCounter
from farm.settings import whole_number_env
from farm.suites import CaseStream
from farm.suites.stream import StreamBatch, skip_note

if TYPE_CHECKING:
    import multiprocessing
    import multiprocessing.process

PARALLEL_MIN_BYTES = 8 << 20
"""Suites smaller than this (~80,000 one-line cases) are read by one process."""
ENV_VAR = "FARM_LOAD_PROCESSES"
SUBMIT_READERS = 2
"""A distributed submit's readers by default (each ~50 MB at a million cases: see above)."""


def load_processes(stream: CaseStream, *, most: int | None = None) -> int:
    """How many processes should read ``stream`` (1: this one alone); when ``FARM_LOAD_PROCESSES``
    is not set, one per core, at most ``most``."""
    wanted = whole_number_env(ENV_VAR, counting="processes")
    if wanted is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        wanted = cores if most is None else min(cores, most)
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


_ID, _LINE = operator.attrgetter("id"), operator.attrgetter("line")
_SKIP_REASON, _LOAD_NOTE = operator.attrgetter("skip_reason"), operator.attrgetter("load_note")
_FORKED: tuple[CaseStream, BatchPlanner, int, int, bool] | None = None
"""What the forked processes inherit (set just before forking)."""
POLL_S = 1.0
"""How often the wait for a batch checks that the reading processes are alive."""


def read_and_plan(stream: CaseStream, planner: BatchPlanner, parts: PlanParts, size: int, read: ReadCounter) -> None:
    """Read the suite in batches of ``size``, selecting and planning each batch into ``parts`` (in
    a process per core when the plan keeps no ``Case`` objects and the suite is large)."""
    travels = parts.cases is None or parts.cases.travels
    processes = load_processes(stream, most=None if parts.cases is None else SUBMIT_READERS) if travels else 1
    if processes > 1:
        plan_in_processes(stream, planner, parts, size, processes, read)
        return
    reading = iter(stream)
    while batch := list(itertools.islice(reading, size)):
        read(len(batch))
        cases, counts = planner.select(batch)
        parts.selection.add(counts)
        if not stream.broken:  # a suite with problems is read on only to list them all
            parts.merge(planner.plan(cases, selected=True))


def plan_in_processes(stream: CaseStream, planner: BatchPlanner, parts: PlanParts, size: int,
                      processes: int, read: ReadCounter) -> None:
    """Read and plan every batch of ``stream`` into ``parts`` in ``processes`` forked processes,
    taking each batch in suite order as soon as every batch before it is in; ``read`` is told
    each batch's number of cases as it is taken."""
    first_here = parts.cases is not None  # a kept case may build on the first (a compact plan's dictionary)
    if parts.cases is not None:
        first = next(stream.read_batches(size, lambda f, b: True if (f, b) == (0, 0) else None), None)
        if first is not None:
            read(len(first.cases))
            parts.add(planner.plan(stream.take(first)), broken=stream.broken)
        if not parts.cases.shareable():
            processes = 1  # the first batch planned no case: this process reads on, alone
    global _FORKED
    _FORKED = (stream, planner, size, processes, first_here)
    try:
        for one in _loaded(0) if processes == 1 else _in_order(processes):
            stream.take_ids(one.batch, one.ids, one.lines, one.skip_notes)
            read(len(one.ids))
            parts.add(one.plan, broken=stream.broken)
    finally:
        _FORKED = None
    stream.finish()


def _loaded(part: int) -> Iterator[LoadedBatch]:
    """The batches of one process's part, read and planned, in their order."""
    assert _FORKED is not None
    stream, planner, size, processes, first_done = _FORKED
    for batch in stream.read_batches(size, lambda f, b: (f + b) % processes == part
                                     and not (first_done and (f, b) == (0, 0))):
        if batch.listed:  # a listing's: its plain cases stay unbuilt
            listed, batch.listed = batch.listed, []
            yield LoadedBatch(batch, list(map(_ID, listed)), list(map(_LINE, listed)),
                              _skip_notes([c for c in listed if isinstance(c, Case)]), planner.plan_listed(listed))
            continue
        cases, batch.cases = batch.cases, []
        yield LoadedBatch(batch, list(map(_ID, cases)), list(map(_LINE, cases)),
                          _skip_notes(cases), planner.plan(cases))


def _skip_notes(cases: list[Case]) -> list[str]:
    if not (any(map(_SKIP_REASON, cases)) or any(map(_LOAD_NOTE, cases))):  # most batches: none, found in C
        return []
    return [skip_note(c) for c in cases if c.skip_reason or c.load_note]


@dataclass
class _Failed:
    traceback: str


def _send_part(part: int, queue: multiprocessing.Queue[tuple[int, LoadedBatch | _Failed | None]]) -> None:
    """A forked process: its batches, one message each as it is planned, then None."""
    try:
        for one in _loaded(part):
            queue.put((part, one))
        queue.put((part, None))
    except BaseException:  # any failure is reported to the reader, which raises it
        queue.put((part, _Failed(traceback.format_exc())))


def _in_order(processes: int) -> Iterator[LoadedBatch]:
    """Every process's batches in suite order, each as soon as no earlier one can still come
    (each process sends its own in order: a batch is next once every process has sent a later
    one or finished). The taking overlaps the reading, so little is left when the last arrives."""
    import multiprocessing  # forked readers only: a suite read in this process needs none of it

    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[tuple[int, LoadedBatch | _Failed | None]] = context.Queue()
    children = [context.Process(target=_send_part, args=(part, queue), daemon=True) for part in range(processes)]
    for child in children:
        child.start()
    last: dict[int, tuple[int, int]] = {part: (-1, -1) for part in range(processes)}
    """The last batch each unfinished process sent."""
    held: list[tuple[tuple[int, int], LoadedBatch]] = []
    try:
        while last:
            try:
                part, item = queue.get(timeout=POLL_S)
            except Empty:
                _check_alive(children, last)
                continue
            if isinstance(item, _Failed):
                raise FarmRuntimeError(f"reading the suite in process {part + 1} of {processes} failed:\n"
                                       f"{item.traceback}")
            if item is None:
                del last[part]
            else:
                last[part] = (item.batch.file, item.batch.number)
                heapq.heappush(held, (last[part], item))  # batch keys are unique: items never compared
            bound = min(last.values(), default=None)
            while held and (bound is None or held[0][0] <= bound):
                yield heapq.heappop(held)[1]
    finally:
        for child in children:
            if child.is_alive():
                child.terminate()
            child.join()


def _check_alive(children: Sequence[multiprocessing.process.BaseProcess],
                 unfinished: dict[int, tuple[int, int]]) -> None:
    for part in unfinished:
        code = children[part].exitcode
        if code is not None and code != 0:  # exit 0: its last messages are still on their way
            raise FarmRuntimeError(f"a process reading the suite ended with exit code {code} "
                                   "(killed? out of memory?); FARM_LOAD_PROCESSES=1 reads it in this one")


__all__ = ["ENV_VAR", "PARALLEL_MIN_BYTES", "LoadedBatch", "load_processes", "plan_in_processes",
           "read_and_plan"]
