"""A plan's cases held as the store keeps them, for a distributed submitter.

A distributed sweep's submitter only stores its plan; holding a ``PlannedCase`` per case (~3 KB
of models) bounded its memory at a million cases. ``CompactCases`` keeps each case as its stored
form instead: the ``PlannedCase`` JSON deflated with the sweep's dictionary (``farm.plan.case_codec``,
~50 characters) and its index line (``CaseSlot``), a batch's joined in one string
(``farm.plan.joined_texts``). It is filled case by case while the suite is read,
written to Redis as it is (``farm.distributed.store.plans``), and decodes a case only when one is read (the
journal, a ``--before`` hook). Pure: no Redis here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar, overload

from farm.agents.ref import AgentRef
from farm.models import Case
from farm.plan.case_codec import CaseCodec
from farm.plan.joined_texts import JoinedTexts
from farm.plan.sweep_plan import CaseSlot, PlannedCase
from farm.run.environment import RunEnvironment
from farm.stats import CasePlan

T = TypeVar("T")
_HEAD = '{"case":'
"""How a ``PlannedCase``'s JSON starts: its first field, the case."""
ADD_BATCH = 10_000
"""Cases held joined in one string (a few planned batches' worth: ``farm.api.PLAN_BATCH``)."""


class Decoded(Sequence[T]):
    """Stored strings read as ``T``s, each decoded only when it is read."""

    def __init__(self, stored: Sequence[str], decode: Callable[[str], T]) -> None:
        self.stored = stored
        self._decode = decode

    def __len__(self) -> int:
        return len(self.stored)

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return [self._decode(text) for text in self.stored[i]]
        return self._decode(self.stored[i])

    def __iter__(self) -> Iterator[T]:
        return (self._decode(text) for text in self.stored)


class CompactCases(Decoded[PlannedCase]):
    """Planned cases in their stored form, in plan order: ``stored`` holds each case's deflated
    JSON (as ``farm:sweep:{id}:cases`` does), ``slot_lines`` its encoded ``CaseSlot`` (as
    ``farm:sweep:{id}:index`` does). A ``CaseSource`` (what a plan reads) and a ``CaseKeeper``
    (what planning fills, ``farm.plan.batch``)."""

    travels = True
    """A kept case is two short strings: batches are planned in other processes and sent back."""

    def __init__(self, env: RunEnvironment) -> None:
        self.stored: JoinedTexts = JoinedTexts()
        super().__init__(self.stored, self._case)
        self.env = env
        self.codec = CaseCodec(b"")
        """The sweep's dictionary: its first case (``farm.plan.case_codec``)."""
        self.has_dictionary = False
        self.slot_lines = JoinedTexts()
        self._tail: tuple[CasePlan | None, AgentRef | None, str] = (None, None, "")
        """The last plan and agent encoded, and the JSON that follows a case's with them (``_json``)."""

    @classmethod
    def of(cls, cases: Iterable[PlannedCase], env: RunEnvironment) -> CompactCases:
        compact = cls(env)
        compact.add(compact.keep(planned.case, planned.plan, planned.agent) for planned in cases)
        return compact

    def keep(self, case: Case, plan: CasePlan, agent: AgentRef) -> tuple[str, str]:
        """What a batch carries back of the ``PlannedCase`` of ``case``, ``plan``, ``agent``: its
        stored form and index line; the first case encoded is the dictionary of every case after it
        (encoding in other processes starts once it is set)."""
        text = self._json(case, plan, agent)
        if not self.has_dictionary:
            self.codec, self.has_dictionary = CaseCodec(text.encode()), True
        return self.codec.encode(text), CaseSlot.line(case, plan, self.env)

    def add(self, kept: Iterable[tuple[str, str]]) -> None:
        """Cases kept (``keep``), joined ``ADD_BATCH`` at a time (``farm.plan.joined_texts``)."""
        items = iter(kept)
        while batch := list(itertools.islice(items, ADD_BATCH)):
            self.stored.extend([stored for stored, _ in batch])
            self.slot_lines.extend([slot_line for _, slot_line in batch])

    def shareable(self) -> bool:
        """Other processes encode cases once the dictionary (the first case) is set."""
        return self.has_dictionary

    def _json(self, case: Case, plan: CasePlan, agent: AgentRef) -> str:
        """``PlannedCase(case=case, plan=plan, agent=agent).model_dump_json()``, without the model:
        the case's JSON, then what follows it, taken once from a whole dump for each plan and agent
        in a row (a suite's cases mostly share both objects; the model and its dump of the plan
        and agent were ~1.5 µs of a case's ~10 µs to encode)."""
        if type(case) is not Case:  # a nested case is dumped as the field's type
            return PlannedCase.checked(case=case, plan=plan, agent=agent).model_dump_json()
        if plan is not self._tail[0] or agent is not self._tail[1]:
            whole = PlannedCase.checked(case=case, plan=plan, agent=agent).model_dump_json()
            head = _HEAD + case.model_dump_json()
            if not whole.startswith(head):  # not the case's own JSON: dumped whole
                return whole
            self._tail = (plan, agent, whole[len(head):])
        return _HEAD + case.model_dump_json() + self._tail[2]

    def json_texts(self) -> Iterator[str]:
        """Each case's JSON text, inflated but not parsed (the journal's plan line)."""
        return (self.codec.decode(text) for text in self.stored)

    def slots(self, env: RunEnvironment | None = None) -> Sequence[CaseSlot]:
        """The index, each slot decoded when read (publishing reads a window at a time); each slot
        was made with the plan's ``env`` as its case was encoded."""
        return Decoded(self.slot_lines, CaseSlot.decode)

    def ids(self) -> list[str]:
        return [text.split(" ", 2)[2] for text in self.slot_lines]

    def reordered(self, order: Sequence[int]) -> CompactCases:
        """The cases in ``order`` (indexes into this plan order), still in their stored form: no
        case is decoded (``--order failing-first`` of a million-case distributed sweep)."""
        moved = CompactCases(self.env)
        moved.codec, moved.has_dictionary, moved._tail = self.codec, self.has_dictionary, self._tail
        for start in range(0, len(order), ADD_BATCH):
            part = order[start:start + ADD_BATCH]
            moved.stored.extend([self.stored[i] for i in part])
            moved.slot_lines.extend([self.slot_lines[i] for i in part])
        return moved

    def _case(self, stored: str) -> PlannedCase:
        return PlannedCase.model_validate_json(self.codec.decode(stored))


def compact(cases: Iterable[PlannedCase], env: RunEnvironment) -> CompactCases:
    """``cases`` in their stored form (as they are when already compact): what a distributed
    submitter stores, whoever planned them."""
    return cases if isinstance(cases, CompactCases) else CompactCases.of(cases, env)


__all__ = ["CompactCases", "Decoded", "compact"]
