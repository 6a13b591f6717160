"""What ``farm judge-check`` re-judges: the distinct outputs of a report's judged checks (SPEC 23).

A judged check is an ``agent`` assertion (``agent (negated)`` too) or a ``gist``/``not_gist``
stock test that got a verdict (a judge that could not be asked gave none). Its run detail keeps
what the judge saw (``actual``), the criterion (``expected``) and whether the check passed. Runs
that gave the same output to the same check are one output, judged once per repeat: 50 identical
answers of a stable case are one question, as the judge cache sees them. An output the report cut
short (over ``MAX_ACTUAL`` characters) cannot be judged again from it and is counted as skipped.

Pure: reads a ``SweepReport`` and, for each case, its ``Case`` when the suite is at hand.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from farm.checks.judged import criterion_text
from farm.models import Case, CaseStats, CheckOutcome, JsonValue
from farm.models.criteria import CriterionStats
from farm.stats.outputs import normalise_output

TRUNCATED = re.compile(r"(…\[truncated \d+ chars\]|… \[truncated, \d+ chars\])$")
"""How ``bound_actual`` and ``bounded`` end a value they cut."""


@dataclass
class JudgedOutput:
    """One distinct output of one judged check of one case, and the runs that gave it."""

    case_id: str
    turn: int
    check: str
    """The check's name: ``agent``, ``agent (negated)``, ``text.gist``, ``structure.x.not_gist``…"""
    criterion: JsonValue
    """What the judge is asked: one criterion, or a ``gist``'s list of them (each asked)."""
    want: str
    """The verdict that passes the check: ``pass``, or ``fail`` for ``not_gist`` and negated ones."""
    use: str | None
    """The judge the suite names for the check (an ``agent`` assertion's ``use``); None: the default."""
    input: JsonValue
    actual: JsonValue
    runs: list[tuple[int, bool]] = field(default_factory=list)
    """(run, whether the check passed in the sweep), for every run that gave this output."""

    @property
    def criterion_key(self) -> tuple[str, int, str, str]:
        return (self.case_id, self.turn, self.check, _text(self.criterion))

    @property
    def criteria(self) -> list[JsonValue]:
        return list(self.criterion) if isinstance(self.criterion, list) else [self.criterion]


def wanted(check: str) -> str | None:
    """``pass`` or ``fail``: what the judge must say for ``check`` to pass; None: not a judged check."""
    if check in ("agent", "agent (negated)"):
        return "fail" if check.endswith("(negated)") else "pass"
    kind = check.rsplit(".", 1)[-1]
    return {"gist": "pass", "not_gist": "fail"}.get(kind)


@dataclass
class Collected:
    """The outputs to judge again, and what could not be."""

    outputs: list[JudgedOutput]
    truncated: int = 0
    notes: list[str] = field(default_factory=list)


def collect(results: Iterable[CaseStats], case_of: Callable[[CaseStats], Case | None]) -> Collected:
    """Every distinct judged output of ``results``; ``case_of`` gives a case as its suite holds it
    (None when the suite is not at hand: the check's own judge is then unknown, the default asks)."""
    found: dict[tuple[str, int, str, str, str], JudgedOutput] = {}
    collected = Collected([])
    for stats in results:
        case = case_of(stats)
        for detail in stats.run_details:
            for check in [*detail.failed_checks, *detail.judged_checks]:
                want = wanted(check.name)
                if want is None or check.verdict in (None, "error"):
                    continue
                if isinstance(check.actual, str) and TRUNCATED.search(check.actual):
                    collected.truncated += 1
                    continue
                key = (stats.id, check.turn, check.name, _text(check.expected), _text(normalise_output(check.actual)))
                output = found.get(key)
                if output is None:
                    output = found[key] = JudgedOutput(stats.id, check.turn, check.name, check.expected, want,
                                                       _use_of(case, check), stats.input, check.actual)
                output.runs.append((detail.run, check.passed))
    collected.outputs = list(found.values())
    return collected


def judged_kind(check: str) -> str:
    """The scorecard's ``kind`` of a judged check: ``agent``, ``gist`` or ``not_gist``."""
    return "agent" if check.startswith("agent") else check.rsplit(".", 1)[-1]


def scorecard_id(criteria: Sequence[CriterionStats], turn: int, check: str, criterion: str) -> str | None:
    """The id (``turn.check``) of the scorecard criterion a judged check is, among a case's
    ``criteria``: the only one of its kind in its turn, else the one whose text holds the criterion
    (the scorecard cuts long values: its first 40 characters); None when that does not tell."""
    kind = judged_kind(check)
    same = [c for c in criteria if c.turn == turn and c.kind == kind]
    if len(same) > 1:
        same = [c for c in same if criterion[:40] in c.criterion]
    return same[0].id if len(same) == 1 else None


def _use_of(case: Case | None, check: CheckOutcome) -> str | None:
    """The judge an ``agent`` assertion of ``case`` names for ``check`` (gist checks ask the default)."""
    if case is None or not check.name.startswith("agent") or not 0 < check.turn <= len(case.turns):
        return None
    for assertion in case.turns[check.turn - 1].assertions:
        if assertion.type == "agent" and _text(assertion.value) == _text(check.expected):
            connector = (assertion.options or {}).get("connector")
            return assertion.use or (connector if isinstance(connector, str) else None)
    return None


_text = criterion_text
