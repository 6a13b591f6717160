"""The cases of ``-i`` read as a stream (``CaseStream``): file after file, case by case, or in batches of
lines that forked processes read apart (``read_batches``, ``take``), every problem and duplicate id
gathered on the way and raised at once. What ``-i`` names is resolved in ``farm.suites.discover``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from farm.checks.spec import forget_parsed_assertions
from farm.errors import Problem, SuiteError
from farm.models import Case
from farm.suites.dynamic import LoadOptions
from farm.suites.file_cases import PlainCase
from farm.suites.jsonl import iter_jsonl, iter_listed

HOCON_SUFFIXES = (".hocon", ".conf")


@dataclass
class StreamBatch:
    """One batch of a suite read on its own (``CaseStream.read_batches``)."""

    file: int
    """The file's number in ``CaseStream.files``."""
    number: int
    """The batch's number in its file: lines ``number × size + 1`` to ``(number + 1) × size``."""
    cases: list[Case] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    file_notes: list[str] = field(default_factory=list)
    listed: list[Case | PlainCase] = field(default_factory=list)
    """A listing's JSONL cases (``LoadOptions.listing``), its plain ones never built: in place of ``cases``."""
    claims: list[tuple[str, int | None]] = field(default_factory=list)
    """The ids of its cases with problems, with their lines: each still claims its id (``CaseStream._claim``)."""


BatchFilter = Callable[[int, int], bool | None]
"""Which batches to read: (file number, batch number) → True, False, or None (no later batch of that file)."""


def skip_note(case: Case) -> str:
    """What the user is told about ``case`` as it is loaded: why it is skipped, or its note."""
    if case.skip_reason:
        return f"{case.source}: case {case.id} skipped: {case.skip_reason}"
    return f"{case.source}: case {case.id}: {case.load_note}"


def _place(file: int, line: int | None) -> int:
    """Where a case was first seen, in one int: its file's number, then its line (0: none)."""
    return (file << 32) | (line or 0)


class _Lined(Protocol):
    @property
    def line(self) -> int | None: ...


_C = TypeVar("_C", bound=_Lined)


def _grouped(cases: Iterator[_C], problems: list[Problem], claims: list[tuple[str, int | None]], size: int,
             file: int, keep: BatchFilter) -> Iterator[tuple[StreamBatch, list[_C]]]:
    """A JSONL file's cases, problems and claimed ids (of its cases with problems), read in line
    order, in their batches of ``size`` lines, each with its cases (a batch of bad lines only is a
    batch too: the problems keep their order across batches)."""

    def batch_of(line: int | None) -> int:
        return (line - 1) // size if line else 0

    def close(batch: StreamBatch, held: list[_C], before: int | None) -> Iterator[tuple[StreamBatch, list[_C]]]:
        ready = [p for p in problems if before is None or batch_of(p.line) < before]
        problems[:] = [p for p in problems if before is not None and batch_of(p.line) >= before]
        groups = {batch.number: (batch, held)} if held else {}
        for problem in ready:
            if problem.line is None and not keep(file, 0):
                continue  # an unreadable file: the reader of its first batch reports it
            number = batch_of(problem.line)
            groups.setdefault(number, (StreamBatch(file, number), []))[0].problems.append(problem)
        for claim in [c for c in claims if before is None or batch_of(c[1]) < before]:
            groups.setdefault(batch_of(claim[1]), (StreamBatch(file, batch_of(claim[1])), []))[0].claims.append(claim)
        claims[:] = [c for c in claims if before is not None and batch_of(c[1]) >= before]
        yield from (groups[n] for n in sorted(groups))

    batch = StreamBatch(file, 0)
    held: list[_C] = []
    for case in cases:
        line = case.line
        number = (line - 1) // size if line else 0  # batch_of, inline: once a case
        if number != batch.number:
            yield from close(batch, held, number)
            batch, held = StreamBatch(file, number), []
        held.append(case)
    yield from close(batch, held, None)


def _claiming(claimed: list[tuple[str, int | None]]) -> Callable[[str, int], None]:
    """A reader's ``broken_id``: each broken case's id and line, kept for its batch."""
    return lambda case_id, line: claimed.append((case_id, line))


def _claims_before(claims: list[tuple[str, int | None]], lines: list[int | None]) -> list[list[tuple[str, int | None]]]:
    """For each of a batch's cases (their ``lines``, in order), the claims of the broken lines read
    before it; then one more list: the claims after the last case (a line that failed holds no case,
    so no claim shares a case's line; a broken HOCON file's claim, line None, comes first)."""
    ordered = iter(claims)
    pending = next(ordered, None)
    before: list[list[tuple[str, int | None]]] = []
    for line in lines:
        these: list[tuple[str, int | None]] = []
        while pending is not None and (pending[1] or 0) < (line or 0):
            these.append(pending)
            pending = next(ordered, None)
        before.append(these)
    before.append(([pending] if pending is not None else []) + list(ordered))
    return before


class CaseStream:
    """The cases of ``-i``, read as they are iterated: a million-case suite is never held whole.

    Problems (bad lines, bad files, duplicate ids across the whole input) are gathered on the
    way; ``check()`` raises them all at once, after the last case. Iterate once.
    """

    def __init__(self, kind: Literal["file", "dir", "message"], root: Path | None, files: list[Path], *,
                 single: bool = False, options: LoadOptions | None = None, notes: list[str] | None = None,
                 cases: list[Case] | None = None) -> None:
        self.kind, self.root, self.files = kind, root, files
        self.notes: list[str] = []
        """Files skipped in a directory sweep and connections not spoken (complete once read)."""
        self.problems: list[Problem] = []
        self._duplicates: list[Problem] = []
        """Listed after every other problem, as the ids' first places are."""
        self._single, self._options, self._file_notes = single, options, notes
        self._given = cases
        self._first: dict[str, int] = {}
        """Each id seen, with where it was first: (file number << 32) | line (0: no line)."""

    def __iter__(self) -> Iterator[Case]:
        if self._given is not None:
            yield from self._given
            return
        forget_parsed_assertions()
        assert self.root is not None
        for number, path in enumerate(self.files):
            name = suite_name(path, self.root, self._single)
            if path.suffix.lower() in HOCON_SUFFIXES:
                from farm.suites.hocon import load_hocon  # a HOCON file only: a JSONL suite never needs it

                loaded, found = load_hocon(path, case_id=name, suite=name, notes=self._file_notes,
                                           options=self._options)
                self.problems += found
                if found:  # a broken file still claims its id: a duplicate of it is reported now, not later
                    self._first_place(name, number, None)
                cases: Iterable[Case] = loaded
            else:
                cases = iter_jsonl(path, name, self._options, self.problems,
                                   broken_id=functools.partial(self._claim, number))
            for case in cases:
                if self._note_new(case, number):
                    yield case
        self.notes[:0] = self._file_notes or []

    def _claim(self, number: int, case_id: str, line: int) -> None:
        """A case with problems still claims its id (a duplicate of it is reported with its problems)."""
        self._first_place(case_id, number, line)

    def _unique(self, case: Case, number: int) -> bool:
        return self._first_place(case.id, number, case.line)

    def _first_place(self, case_id: str, number: int, line: int | None) -> bool:
        """Whether ``case_id`` (of file ``number``) is seen for the first time; else a problem."""
        first = self._first.get(case_id)
        if first is None:
            self._first[case_id] = _place(number, line)
            return True
        source, first_line = str(self.files[first >> 32]), first & 0xFFFFFFFF
        at = f"{source}:{first_line}" if first_line else source
        self._duplicates.append(Problem(str(self.files[number]), line, "id",
                                        f"duplicate id {case_id!r} (first at {at})"))
        return False

    def read_batches(self, size: int, keep: BatchFilter) -> Iterator[StreamBatch]:
        """The batches ``keep(file number, batch number)`` accepts (None: none after it in that
        file, so reading the file stops there), read apart from the others:
        ``size`` lines of a JSONL file, or a whole HOCON file (its batch 0). Each holds its cases
        (a listing's JSONL ones in ``listed``, its plain cases unbuilt: ``farm.suites.jsonl.iter_listed``;
        duplicate ids not checked: ``take``/``take_ids`` do, where every batch meets), its problems and
        its notes. A process loading part of a suite reads its batches with this
        (``farm.plan.load_processes``); the lines of other batches are skipped unparsed."""
        forget_parsed_assertions()
        assert self.root is not None
        for number, path in enumerate(self.files):
            name = suite_name(path, self.root, self._single)
            if path.suffix.lower() in HOCON_SUFFIXES:
                if keep(number, 0):
                    from farm.suites.hocon import load_hocon  # as in __iter__

                    notes: list[str] | None = None if self._file_notes is None else []
                    loaded, problems = load_hocon(path, case_id=name, suite=name, notes=notes, options=self._options)
                    claims: list[tuple[str, int | None]] = [(name, None)] if problems else []  # as when iterated
                    yield StreamBatch(number, 0, loaded, problems, notes or [], claims=claims)
                continue
            if keep(number, 0) is None:
                continue
            found: list[Problem] = []
            claimed: list[tuple[str, int | None]] = []
            lines, claim = (size, functools.partial(keep, number)), _claiming(claimed)
            if self._options is not None and self._options.listing:
                for batch, listed in _grouped(iter_listed(path, name, self._options, found, batches=lines,
                                                          broken_id=claim), found, claimed, size, number, keep):
                    batch.listed = listed
                    yield batch
                continue
            for batch, cases in _grouped(iter_jsonl(path, name, self._options, found, batches=lines, broken_id=claim),
                                         found, claimed, size, number, keep):
                batch.cases = cases
                yield batch

    def take(self, batch: StreamBatch) -> list[Case]:
        """A batch ``read_batches`` read in this process: its problems and notes join the
        stream's, and its cases (a listing's built) are checked for ids seen before; the new ones returned."""
        self.problems += batch.problems
        if self._file_notes is not None:
            self._file_notes += batch.file_notes
        cases = batch.cases or [c if isinstance(c, Case) else c.case() for c in batch.listed]
        if not batch.claims:
            return [case for case in cases if self._note_new(case, batch.file)]
        new: list[Case] = []
        for case, claims in zip([*cases, None], _claims_before(batch.claims, [c.line for c in cases]), strict=True):
            for case_id, line in claims:
                self._first_place(case_id, batch.file, line)
            if case is not None and self._note_new(case, batch.file):
                new.append(case)
        return new

    def take_ids(self, batch: StreamBatch, ids: list[str], lines: list[int | None], skip_notes: list[str]) -> None:
        """As ``take``, for a batch whose cases stayed where they were read: their ids and lines."""
        self.problems += batch.problems
        if self._file_notes is not None:
            self._file_notes += batch.file_notes
        number = _place(batch.file, 0)  # a million ids: the file's part once, the line or-ed in below
        places = dict(zip(ids, [number | (line or 0) for line in lines], strict=True))
        if not batch.claims and len(places) == len(ids) and self._first.keys().isdisjoint(places):
            self._first.update(places)  # no id seen before, none twice (most batches): all kept at once, in C
        else:
            for case_id, line, claims in zip([*ids, None], [*lines, None], _claims_before(batch.claims, lines),
                                             strict=True):
                for claimed, at in claims:
                    self._first_place(claimed, batch.file, at)
                if case_id is not None:
                    self._first_place(case_id, batch.file, line)
        self.notes += skip_notes

    def finish(self) -> None:
        """After the last ``take``: the files' notes go first, as when iterated."""
        self.notes[:0] = self._file_notes or []

    def _note_new(self, case: Case, number: int) -> bool:
        if not self._unique(case, number):
            return False
        if case.skip_reason or case.load_note:
            self.notes.append(skip_note(case))
        return True

    @property
    def broken(self) -> bool:
        """Whether a problem was found so far (the cases read are then only read for their problems)."""
        return bool(self.problems or self._duplicates)

    def check(self) -> None:
        """SuiteError listing every problem found (call once the cases are read)."""
        self._first.clear()
        if self.problems or self._duplicates:
            raise SuiteError(self.problems + self._duplicates)


def suite_name(path: Path, root: Path, single: bool) -> str:
    """The file's stem for a single file, else its path under ``root`` without extension."""
    if single:
        return path.stem
    return path.relative_to(root).with_suffix("").as_posix()
