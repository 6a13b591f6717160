"""neuro-san stock tests on a reply's ``text``, ``sly_data`` or ``structure``.

``actual`` is the value in the reply, ``given`` the value in the file; a test's values are
ANDed. Semantics (SPEC 4.2):

- ``value`` / ``not_value``: actual equals / does not equal given, as JSON values.
- ``less`` / ``not_less`` / ``greater`` / ``not_greater``, documented (default) semantics:
  actual < given / actual ≥ given / actual > given / actual ≤ given.
  With ``neuro_san_compat`` (neuro-san's code, which calls ``assertLess(given, actual)``):
  ``less`` passes when actual > given, ``not_less`` when actual ≤ given, ``greater`` when
  actual < given, ``not_greater`` when actual ≥ given.
  Both sides must be numbers, or both strings (compared lexicographically).
- ``keywords`` / ``not_keywords``: given is / is not in actual: a substring of a string
  (a number given is looked for as its JSON text, so ``keywords = 1966`` works in HOCON), an
  element of a list (JSON equality), a key of an object.
- ``gist`` / ``not_gist``: a judge says actual does / does not meet the criterion.

A missing key, a type mismatch or a failed judge fails the test whichever its polarity.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from farm.checks.base import CheckContext
from farm.checks.extract import MISSING, bound_actual, is_number, json_equal, json_type_name, safe_repr, to_text
from farm.checks.judged import ask_confirmed
from farm.models import CheckOutcome, Reply, StockTest

__all__ = ["COMPAT_ORDER", "DOCUMENTED_ORDER", "evaluate_stock", "lookup"]

Finding = tuple[bool, str]
"""``(passed, message)`` for one given value."""

_Op = Callable[[Any, Any], bool]

DOCUMENTED_ORDER: dict[str, tuple[_Op, str]] = {
    "less": (operator.lt, "<"),
    "not_less": (operator.ge, ">="),
    "greater": (operator.gt, ">"),
    "not_greater": (operator.le, "<="),
}
"""Ordering tests as neuro-san documents them: (operator on (actual, given), symbol)."""

COMPAT_ORDER: dict[str, tuple[_Op, str]] = {
    "less": (operator.gt, ">"),
    "not_less": (operator.le, "<="),
    "greater": (operator.lt, "<"),
    "not_greater": (operator.ge, ">="),
}
"""Ordering tests as neuro-san's code compares them (``--neuro-san-compat``)."""


def lookup(data: Any, key: list[str]) -> tuple[Any, str]:
    """Walk ``key`` into ``data``; returns ``(value, "")`` or ``(MISSING, why)``.

    A dict that holds the remaining segments as one literal dotted key is accepted too.
    """
    current = data
    for i, part in enumerate(key):
        if isinstance(current, dict):
            if part in current:
                current = current[part]
                continue
            rest = ".".join(key[i:])
            if rest in current:
                return current[rest], ""
            keys = ", ".join(map(str, list(current)[:10])) or "none"
            return MISSING, f"key {'.'.join(key[: i + 1])!r} is missing (keys there: {keys})"
        if isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
            continue
        parent = ".".join(key[:i]) or "the data"
        return MISSING, f"key {'.'.join(key[: i + 1])!r} is missing ({parent} is {json_type_name(current)})"
    return current, ""


def _actual_of(test: StockTest, reply: Reply) -> tuple[Any, str]:
    if test.target == "text":
        return (reply.text, "") if reply.text is not None else (MISSING, "the reply has no text")
    data = reply.sly_data if test.target == "sly_data" else reply.structure
    if data is None:
        return MISSING, f"the reply has no {test.target}"
    return lookup(data, test.key)


def outcome_name(test: StockTest) -> str:
    """``text.keywords``, ``sly_data.equals.value``, ``structure.answer.keywords``."""
    return ".".join([test.target, *test.key, test.test])


async def evaluate_stock(test: StockTest, reply: Reply, ctx: CheckContext, turn: int = 1) -> CheckOutcome:
    """Evaluate one stock test (all of its values); never raises."""
    name = outcome_name(test)
    actual, missing = _actual_of(test, reply)
    verdict = reason = None
    votes: list[str] | None = None
    if actual is MISSING:
        failures = [missing]
    elif test.test in ("gist", "not_gist"):
        failures, verdict, reason, votes = await _gist(test, actual, ctx)
    else:
        failures = []
        for given in test.values:
            try:
                ok, message = _evaluate_one(test.test, actual, given, ctx.neuro_san_compat)
            except Exception as exc:  # a comparison that blows up is a failed test, not a crash
                ok, message = False, f"{type(exc).__name__}: {exc}"
            if not ok:
                failures.append(message)
    return CheckOutcome(
        name=name,
        passed=not failures,
        message="; ".join(failures),
        actual=bound_actual(actual),
        expected=bound_actual(test.values[0] if len(test.values) == 1 else test.values),
        turn=turn,
        verdict=verdict,
        reason=reason,
        judge_votes=votes,
    )


def _evaluate_one(test: str, actual: Any, given: Any, compat: bool) -> Finding:
    if test in ("value", "not_value"):
        equal = json_equal(actual, given)
        if test == "value":
            return equal, "" if equal else f"expected {safe_repr(given)}, got {safe_repr(actual)}"
        return not equal, "" if not equal else f"expected anything but {safe_repr(given)}"
    if test in DOCUMENTED_ORDER:
        return _ordered(test, actual, given, compat)
    return _keywords(test, actual, given)


def _ordered(test: str, actual: Any, given: Any, compat: bool) -> Finding:
    op, symbol = (COMPAT_ORDER if compat else DOCUMENTED_ORDER)[test]
    both_numbers = is_number(actual) and is_number(given)
    if not both_numbers and not (isinstance(actual, str) and isinstance(given, str)):
        shown = f"{json_type_name(actual)} {safe_repr(actual)} with {json_type_name(given)} {safe_repr(given)}"
        return False, f"{test}: cannot compare {shown}"
    if op(actual, given):
        return True, ""
    semantics = "neuro-san-compat" if compat else "documented"
    expected = f"expected actual {symbol} {safe_repr(given)} ({semantics} semantics)"
    return False, f"{test}: {expected}, got {safe_repr(actual)}"


def _keywords(test: str, actual: Any, given: Any) -> Finding:
    found, where = _contains(actual, given)
    if found is None:
        return False, where
    wanted = test == "keywords"
    if found == wanted:
        return True, ""
    if wanted:
        return False, f"{safe_repr(given)} not found in {where} {safe_repr(actual)}"
    return False, f"{safe_repr(given)} found in {where} {safe_repr(actual)}"


def _contains(actual: Any, given: Any) -> tuple[bool | None, str]:
    """``(found, what actual is)``; ``(None, why)`` when the types cannot be compared."""
    if isinstance(actual, str):
        if is_number(given):
            given = to_text(given)
        if not isinstance(given, str):
            return None, f"cannot look for {json_type_name(given)} {safe_repr(given)} in a string"
        return given in actual, "text"
    if isinstance(actual, list):
        return any(json_equal(item, given) for item in actual), "list"
    if isinstance(actual, dict):
        if not isinstance(given, str):
            return None, f"object keys are strings; cannot look for {json_type_name(given)} {safe_repr(given)}"
        return given in actual, "keys of"
    return None, f"cannot look for a keyword in {json_type_name(actual)} {safe_repr(actual)}"


async def _gist(test: StockTest, actual: Any, ctx: CheckContext
                ) -> tuple[list[str], str | None, str | None, list[str] | None]:
    """Failures, verdict, reasons and the ``judge_votes`` of the first confirmed criterion that still
    fails (else of the first confirmed one)."""
    failures: list[str] = []
    verdicts: list[str] = []
    reasons: list[str] = []
    votes: list[str] | None = None
    want = "pass" if test.test == "gist" else "fail"
    for criterion in test.values:
        call = await ask_confirmed(ctx, None, criterion, actual, want)
        if call.votes is not None and (votes is None or (call.verdict is not None and call.verdict.verdict != want
                                                         and votes.count(want) * 2 > len(votes))):
            votes = call.votes
        if call.verdict is None:
            failures.append(call.error)
            continue
        verdicts.append(call.verdict.verdict)
        if call.verdict.reason:
            reasons.append(call.verdict.reason)
        if call.verdict.verdict == "equivocal":
            failures.append(f"the judge equivocated on {safe_repr(criterion)}: {call.verdict.reason}")
        elif call.verdict.verdict == "error":
            failures.append(f"the judge could not be asked about {safe_repr(criterion)}: {call.verdict.reason}")
        elif call.verdict.verdict != want:
            failures.append(f"the judge says {call.verdict.verdict} for {safe_repr(criterion)}: {call.verdict.reason}")
    verdict = next((v for v in verdicts if v != want), verdicts[0] if verdicts else None)
    return failures, verdict, "; ".join(reasons) or None, votes
