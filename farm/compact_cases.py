"""A plan's cases held as the store keeps them, for a distributed submitter.

A distributed sweep's submitter only stores its plan; holding a ``PlannedCase`` per case (~3 KB
of models) bounded its memory at a million cases. ``CompactCases`` keeps each case as its stored
form instead: the ``PlannedCase`` JSON deflated with the sweep's dictionary (``farm.case_codec``,
~100 bytes) and its index line (``CaseSlot``). It is filled case by case while the suite is read,
written to Redis as it is (``farm.store_plan``), and decodes a case only when one is read (the
journal, a ``--before`` hook). Pure: no Redis here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from farm.case_codec import CaseCodec
from farm.execute import RunEnvironment
from farm.plan import CaseSlot, PlannedCase


class CompactCases(Sequence[PlannedCase]):
    """Planned cases in their stored form, in plan order."""

    def __init__(self, env: RunEnvironment) -> None:
        self.env = env
        self.codec: CaseCodec | None = None
        """The sweep's dictionary: its first case (``farm.case_codec``)."""
        self.stored: list[str] = []
        """Each case's deflated JSON, as ``farm:sweep:{id}:cases`` holds it."""
        self.slot_lines: list[str] = []
        """Each case's ``CaseSlot``, encoded, as ``farm:sweep:{id}:index`` holds it."""

    @classmethod
    def of(cls, cases: Iterable[PlannedCase], env: RunEnvironment) -> CompactCases:
        compact = cls(env)
        for planned in cases:
            compact.append(planned)
        return compact

    def append(self, planned: PlannedCase) -> None:
        text = planned.model_dump_json()
        if self.codec is None:
            self.codec = CaseCodec(text.encode())
        self.stored.append(self.codec.encode(text))
        self.slot_lines.append(CaseSlot.of(planned, self.env).encode())

    def __len__(self) -> int:
        return len(self.stored)

    @overload
    def __getitem__(self, i: int) -> PlannedCase: ...
    @overload
    def __getitem__(self, i: slice) -> list[PlannedCase]: ...
    def __getitem__(self, i: int | slice) -> PlannedCase | list[PlannedCase]:
        if isinstance(i, slice):
            return [self._decode(text) for text in self.stored[i]]
        return self._decode(self.stored[i])

    def __iter__(self) -> Iterator[PlannedCase]:
        return (self._decode(text) for text in self.stored)

    def json_texts(self) -> Iterator[str]:
        """Each case's JSON text, inflated but not parsed (the journal's plan line)."""
        codec = self.codec or CaseCodec(b"")
        return (codec.decode(text) for text in self.stored)

    def slots(self) -> Sequence[CaseSlot]:
        """The index, each slot decoded when read (publishing reads a window at a time)."""
        return _Slots(self.slot_lines)

    def ids(self) -> list[str]:
        return [text.split(" ", 2)[2] for text in self.slot_lines]

    def _decode(self, stored: str) -> PlannedCase:
        return PlannedCase.model_validate_json((self.codec or CaseCodec(b"")).decode(stored))


class _Slots(Sequence[CaseSlot]):
    def __init__(self, lines: list[str]) -> None:
        self._lines = lines

    def __len__(self) -> int:
        return len(self._lines)

    @overload
    def __getitem__(self, i: int) -> CaseSlot: ...
    @overload
    def __getitem__(self, i: slice) -> list[CaseSlot]: ...
    def __getitem__(self, i: int | slice) -> CaseSlot | list[CaseSlot]:
        if isinstance(i, slice):
            return [CaseSlot.decode(text) for text in self._lines[i]]
        return CaseSlot.decode(self._lines[i])

    def __iter__(self) -> Iterator[CaseSlot]:
        return (CaseSlot.decode(text) for text in self._lines)


def compact(cases: Sequence[PlannedCase], env: RunEnvironment) -> CompactCases:
    """``cases`` in their stored form (as they are when already compact)."""
    return cases if isinstance(cases, CompactCases) else CompactCases.of(cases, env)


__all__ = ["CompactCases", "compact"]
