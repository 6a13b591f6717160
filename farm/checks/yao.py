"""Yao assertions, evaluated on a reply's output (its structure when present, else its text).

Each check returns a ``Result``: whether it held, a message saying what was seen either way
(the negated form needs the positive description), and the value it looked at. ``error``
marks a check that could not be evaluated (a script that raised, a judge that equivocated or
could not be asked): it fails whatever ``negate`` says.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from farm.checks.base import CheckContext
from farm.checks.extract import (
    MISSING,
    bound_actual,
    extract_data,
    find_path,
    json_equal,
    json_type_matches,
    json_type_name,
    parse_json_text,
    safe_repr,
    to_text,
)
from farm.checks.judged import ask_confirmed
from farm.checks.script import call_script, resolve_script
from farm.checks.tools import check_tool_called, check_tool_result
from farm.checks.trajectory import TRAJECTORY_CHECKS, check_trajectory_family
from farm.models import Assertion, CheckOutcome, Reply

__all__ = ["Result", "evaluate_assertion"]


@dataclass(frozen=True)
class Result:
    """What one check saw. ``message`` describes the finding, pass or fail."""

    passed: bool
    message: str
    actual: Any = None
    error: bool = False
    verdict: str | None = None
    reason: str | None = None
    votes: list[str] | None = None


CheckFn = Callable[[Assertion, Reply, CheckContext], "Result | Awaitable[Result]"]


async def evaluate_assertion(a: Assertion, reply: Reply, ctx: CheckContext, turn: int = 1) -> CheckOutcome:
    """Evaluate one assertion; never raises (a crashing check is a failed outcome)."""
    try:
        result = _CHECKS[a.type](a, reply, ctx)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        result = Result(False, f"check crashed: {type(exc).__name__}: {exc}", error=True)
    passed = False if result.error else result.passed != a.negate
    message = ""
    if not passed:
        message = a.message or (f"negated, but {result.message}" if a.negate and not result.error else result.message)
    return CheckOutcome(
        name=a.type if not a.negate else f"{a.type} (negated)",
        passed=passed,
        message=message,
        actual=bound_actual(result.actual),
        expected=bound_actual(_expected_of(a)),
        turn=turn,
        verdict=result.verdict,
        reason=result.reason,
        judge_votes=result.votes,
    )


def _expected_of(a: Assertion) -> Any:
    if a.type == "json_path":
        return {"path": a.path, "value": a.value}
    if a.type == "script":
        return a.script
    return a.value


def check_equals(a: Assertion, reply: Reply, ctx: CheckContext) -> Result:
    """Output equals value; text output is parsed as JSON first when value is not a string."""
    actual = reply.output
    if not isinstance(a.value, str) and isinstance(actual, str):
        actual = parse_output_json(actual)
    if json_equal(actual, a.value):
        return Result(True, f"output equals {safe_repr(a.value)}", actual)
    hint = explain_diff(a.value, actual)
    return Result(False, f"expected {safe_repr(a.value)}, got {safe_repr(actual)}{hint}", actual)


def parse_output_json(text: str) -> Any:
    """The JSON a text holds as a whole (or as its only fenced block), else the text itself."""
    stripped = text.strip()
    ok, value = parse_json_text(stripped)
    if ok:
        return value
    if stripped.startswith("```") and stripped.count("```") == 2:
        found = extract_data(stripped)
        if found is not stripped:
            return found
    return text


def explain_diff(expected: Any, actual: Any) -> str:
    """A short pytest-like hint about where two values differ."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        missing = [k for k in expected if k not in actual]
        extra = [k for k in actual if k not in expected]
        differ = [k for k in expected if k in actual and not json_equal(expected[k], actual[k])]
        parts = [
            f"{label}: {', '.join(map(str, keys[:5]))}"
            for label, keys in (("differing keys", differ), ("missing keys", missing), ("extra keys", extra))
            if keys
        ]
        return f" ({'; '.join(parts)})" if parts else ""
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return f" (length {len(actual)} instead of {len(expected)})"
        first = next(i for i, (x, y) in enumerate(zip(expected, actual, strict=True)) if not json_equal(x, y))
        return f" (first difference at index {first})"
    if json_type_name(expected) != json_type_name(actual):
        return f" ({json_type_name(actual)} instead of {json_type_name(expected)})"
    return ""


def check_contains(a: Assertion, reply: Reply, ctx: CheckContext) -> Result:
    """The output as text contains the value as text (compact sorted JSON for non-strings)."""
    text = to_text(reply.output)
    needle = "null" if a.value is None else to_text(a.value)
    if needle in text:
        return Result(True, f"output contains {safe_repr(needle)}", reply.output)
    return Result(False, f"{safe_repr(needle)} not found in output {safe_repr(text)}", reply.output)


def check_not_contains(a: Assertion, reply: Reply, ctx: CheckContext) -> Result:
    found = check_contains(a, reply, ctx)
    return Result(not found.passed, found.message, found.actual)


def check_regex(a: Assertion, reply: Reply, ctx: CheckContext) -> Result:
    text = to_text(reply.output)
    match = re.search(str(a.value), text)
    if match:
        return Result(True, f"output matches /{a.value}/ at {safe_repr(match.group(0))}", reply.output)
    return Result(False, f"no match for /{a.value}/ in output {safe_repr(text)}", reply.output)


def check_type(a: Assertion, reply: Reply, ctx: CheckContext) -> Result:
    actual = reply.output
    got = json_type_name(actual)
    if json_type_matches(actual, str(a.value)):
        return Result(True, f"output is of type {a.value}", actual)
    return Result(False, f"expected output of type {a.value}, got {got} {safe_repr(actual)}", actual)


def check_json_path(a: Assertion, reply: Reply, ctx: CheckContext) -> Result:
    """The value at ``path`` equals ``value`` (or is one of them, for a list ``value``)."""
    output = reply.output
    data = extract_data(output) if isinstance(output, str) else output
    found = find_path(data, a.path or "$")
    if found is MISSING:
        return Result(False, f"{a.path} not found in output {safe_repr(data)}", data)
    if isinstance(a.value, list) and not isinstance(found, list):
        ok = any(json_equal(found, v) for v in a.value)
        relation = f"one of {safe_repr(a.value)}"
    else:
        ok = json_equal(found, a.value)
        relation = safe_repr(a.value)
    if ok:
        return Result(True, f"{a.path} is {relation}", found)
    return Result(False, f"{a.path}: expected {relation}, got {safe_repr(found)}{explain_diff(a.value, found)}", found)


async def check_script(a: Assertion, reply: Reply, ctx: CheckContext) -> Result:
    """Call the user's function with (output, input, expected); its exception fails the check.

    ``expected`` is the assertion's own ``value`` when it has one, else the case's ``expected``.
    """
    output = reply.output
    try:
        fn = resolve_script(a.script or "", ctx.base_dir)
        expected = a.value if a.has_value else ctx.expected
        passed, message = await call_script(fn, output, ctx.input, expected)
    except Exception as exc:
        return Result(False, f"script {a.script} raised {type(exc).__name__}: {exc}", output, error=True)
    return Result(passed, message or f"script {a.script} {'passed' if passed else 'failed'}", output)


async def check_agent(a: Assertion, reply: Reply, ctx: CheckContext) -> Result:
    """An LLM judge decides whether the output meets the criterion in ``value``."""
    output = reply.output
    connector = (a.options or {}).get("connector")
    call = await ask_confirmed(ctx, a.use or (connector if isinstance(connector, str) else None), a.value, output,
                               "fail" if a.negate else "pass")
    if call.verdict is None:
        return Result(False, call.error, output, error=True)
    verdict, reason, votes = call.verdict.verdict, call.verdict.reason, call.votes
    if verdict == "equivocal":
        return Result(False, f"the judge equivocated: {reason}", output, True, verdict, reason, votes)
    if verdict == "error":
        return Result(False, f"the judge could not be asked: {reason}", output, True, verdict, reason, votes)
    said = f"the judge says {verdict}" + (f": {reason}" if reason else "") + (f" ({_tally(votes)})" if votes else "")
    return Result(verdict == "pass", said, output, verdict=verdict, reason=reason, votes=votes)


def _tally(votes: list[str]) -> str:
    """``2 of 3 verdicts pass``-style note of a confirmed verdict's votes."""
    return ", ".join(f"{votes.count(v)} {v}" for v in dict.fromkeys(votes)) + f" of {len(votes)} verdicts"


def _tool_called(a: Assertion, reply: Reply, ctx: CheckContext) -> Result:
    passed, message, actual = check_tool_called(a.value, reply.tool_calls)
    return Result(passed, message, actual)


def _tool_result(a: Assertion, reply: Reply, ctx: CheckContext) -> Result:
    passed, message, actual = check_tool_result(a.value, reply.tool_calls)
    return Result(passed, message, actual)


def _trajectory_check(a: Assertion, reply: Reply, ctx: CheckContext) -> Result:
    """A trajectory check (SPEC 21) on the run's calls so far (``ctx.trajectory``), else the reply's."""
    calls = ctx.trajectory if ctx.trajectory is not None else reply.tool_calls
    passed, message, actual = check_trajectory_family(a.type, a.value, calls)
    return Result(passed, message, actual)


_CHECKS: dict[str, CheckFn] = {
    "equals": check_equals,
    "contains": check_contains,
    "not_contains": check_not_contains,
    "regex": check_regex,
    "type": check_type,
    "json_path": check_json_path,
    "script": check_script,
    "agent": check_agent,
    "tool_called": _tool_called,
    "tool_result": _tool_result,
    **dict.fromkeys(TRAJECTORY_CHECKS, _trajectory_check),
}
