"""What the cases of one JSONL file share as it is read (``FileCases``), and a listing's plain
cases, never built (``PlainCase``).

A file's cases are copied from the first with the same optional fields (``PerCaseModel.copied``).
``--collect-only`` goes further where several processes read (``farm.suites.jsonl.iter_listed``):
the commonest case (an id, a string input and at most ``assert``) is not built at all, only its
id, line, shared turn and input kept; the few a message names are built from their file's first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from farm.checks.spec import parse_assertions
from farm.models import Assertion, Case, Turn

__all__ = ["FileCases", "PlainCase", "listed_turn", "plain_case"]


@dataclass
class FileCases:
    """What the cases of one file share: where they are, and the first with each set of optional
    fields (the others are copied from it: ``PerCaseModel.copied``)."""

    source: str
    suite: str
    base_dir: str
    first: dict[tuple[str, ...], Case] = field(default_factory=dict)
    plain_turns: dict[str, tuple[Turn]] = field(default_factory=dict)
    """A listing's plain cases' turns (``plain_case``), by the ``repr`` of their ``assert``."""


class PlainCase(NamedTuple):
    """A listed case (``LoadOptions.listing``) of the commonest shape, never built: an id, a
    string input and at most ``assert`` (``plain_case``). Its case is ``like``, the file's first
    case of that shape, with its own id, line, turn and input (``case()``): a listing reads a
    million of these, each a tuple, and builds the few it names."""

    id: str
    line: int
    turns: tuple[Turn]
    """Its one turn (the checks only, shared with the listed cases with the same ``assert``)."""
    input: str
    like: Case

    @property
    def skip(self) -> bool:  # a plain case has no skip: the listing's planner and selection read it as a case's
        return False

    @property
    def skip_reason(self) -> str | None:
        return None

    def case(self) -> Case:
        """What ``parse_case`` builds of its line."""
        return self.like.copied({"id": self.id, "turns": list(self.turns), "input": self.input, "line": self.line})


MAX_LISTED_TURNS = 1024
"""Distinct check lists whose listed turn is kept; beyond, the cache starts again (memory bound)."""
_LISTED_TURNS: dict[tuple[int, ...], Turn] = {}
"""``LoadOptions.listing``: the one turn of the listed cases with the same checks, by the ids
of its ``Assertion`` objects (``parse_assertions`` shares them; the turn keeps them alive, so
an id is not reused while its turn is here)."""


def listed_turn(assertions: list[Assertion]) -> Turn:
    """A listed case's turn: its checks, no messages (a listing plans the case, never sends it);
    cases with the same ``Assertion`` objects share one (farm models are never assigned to)."""
    key = tuple(map(id, assertions))
    turn = _LISTED_TURNS.get(key)
    if turn is None:
        if len(_LISTED_TURNS) >= MAX_LISTED_TURNS:
            _LISTED_TURNS.clear()
        turn = _LISTED_TURNS[key] = Turn.checked(messages=[], assertions=assertions)
    return turn


_PLAIN_KEYS = frozenset(("id", "input", "assert"))
_NO_ASSERT = object()


def plain_case(obj: dict[str, Any], line: int, file: FileCases) -> PlainCase | None:
    """Line ``line``'s object as a listing's ``PlainCase`` (keys among id, input and assert; the
    id a non-blank string, the input a string, the ``assert`` one this file's listing read
    before without a problem), once ``file`` has a first case of that shape to be its ``like``.
    None: ``parse_case`` reads it (a problem, the first of its kind, any other shape)."""
    like = file.first.get(())
    if like is None or not obj.keys() <= _PLAIN_KEYS:
        return None
    case_id, text = obj.get("id"), obj.get("input")
    if not isinstance(case_id, str) or not isinstance(text, str) or not case_id.strip():
        return None
    checks = obj.get("assert", _NO_ASSERT)
    seen = "" if checks is _NO_ASSERT else repr(checks)  # repr tells JSON values apart, as ``parse_assertions``
    turns = file.plain_turns.get(seen)
    if turns is None:
        assertions, issues = parse_assertions(checks, file.base_dir) if seen else ([], [])
        if issues:
            return None
        if len(file.plain_turns) >= MAX_LISTED_TURNS:
            file.plain_turns.clear()
        turns = file.plain_turns[seen] = (listed_turn(assertions),)
    return _new_plain(PlainCase, (case_id, line, turns, text, like))


_new_plain = tuple.__new__
"""``PlainCase(...)`` without the Python frame of its generated ``__new__`` (a million listed cases)."""

