"""Checks on a run's trajectory (SPEC 21): ``trajectory``, ``tool_count``, ``not_tool_called``,
``max_steps``. They read the run's tool calls over every turn answered so far (a check of turn 2
sees the calls of turns 1 and 2); names and arguments match as in ``tool_called``.

``trajectory`` modes: ``strict`` (exactly the listed calls, in order), ``in_order`` (the listed
calls in this order, others may come between), ``unordered`` (the same calls with multiplicity, any
order), ``subset`` (every call made is listed), ``superset`` (every listed call is made at least once).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from farm.checks.extract import safe_repr
from farm.checks.tools import call_matches, describe_spec, summary
from farm.models import ToolCall

__all__ = ["MATCH_MODES", "TRAJECTORY_CHECKS", "check_trajectory_family"]

MATCH_MODES = ("strict", "in_order", "unordered", "subset", "superset")
TRAJECTORY_CHECKS = ("trajectory", "tool_count", "not_tool_called", "max_steps")

Finding = tuple[bool, str, Any]
"""``(passed, message, actual)``."""
Verdict = tuple[bool, str]


def path_text(calls: Sequence[ToolCall]) -> str:
    """``[search → fetch]``; ``[]`` for no call."""
    return "[" + " → ".join(c.name for c in calls) + "]"


def _spec_text(tools: Sequence[Any]) -> str:
    return "[" + " → ".join(_spec_name(s) for s in tools) + "]"


def _spec_name(spec: Any) -> str:
    if not isinstance(spec, dict):
        return str(spec)
    name = str(spec.get("name"))
    return f"{name} {safe_repr(spec['arguments'])}" if "arguments" in spec else name


def _in_order(tools: Sequence[Any], calls: Sequence[ToolCall]) -> bool:
    it = iter(calls)
    return all(any(call_matches(spec, call) for call in it) for spec in tools)


def _unordered(tools: Sequence[Any], calls: Sequence[ToolCall]) -> bool:
    """A one-to-one pairing of listed calls and calls made (augmenting paths: a spec with arguments
    may match fewer calls than a bare name, so a greedy pairing could miss one)."""
    if len(tools) != len(calls):
        return False
    owner: dict[int, int] = {}

    def place(s: int, seen: set[int]) -> bool:
        for c, call in enumerate(calls):
            if c not in seen and call_matches(tools[s], call):
                seen.add(c)
                if c not in owner or place(owner[c], seen):
                    owner[c] = s
                    return True
        return False

    return all(place(s, set()) for s in range(len(tools)))


def check_trajectory(value: Any, calls: Sequence[ToolCall]) -> Verdict:
    tools, mode = value["tools"], value.get("match", "strict")
    if mode == "strict":
        ok = len(tools) == len(calls) and all(call_matches(s, c) for s, c in zip(tools, calls, strict=False))
    elif mode == "in_order":
        ok = _in_order(tools, calls)
    elif mode == "unordered":
        ok = _unordered(tools, calls)
    elif mode == "subset":
        ok = all(any(call_matches(s, c) for s in tools) for c in calls)
    else:  # superset
        ok = all(any(call_matches(s, c) for c in calls) for s in tools)
    return ok, f"expected path {_spec_text(tools)} ({mode}), actual path {path_text(calls)}"


def check_tool_count(value: Any, calls: Sequence[ToolCall]) -> Verdict:
    tool = value["tool"]
    n = sum(1 for c in calls if tool == "*" or call_matches(tool, c))
    low, high = value.get("min", 0), value.get("max")
    what = "tool calls" if tool == "*" else f"calls to {tool!r}"
    bounds = f"at least {low}" if high is None else f"{low}..{high}"
    ok = n >= low and (high is None or n <= high)
    return ok, f"{n} {what}, expected {bounds} (actual path {path_text(calls)})"


def check_not_tool_called(value: Any, calls: Sequence[ToolCall]) -> Verdict:
    specs = value if isinstance(value, list) else [value]
    for step, call in enumerate(calls, start=1):
        if any(call_matches(s, call) for s in specs):
            return False, f"{call.name} was called at step {step} (actual path {path_text(calls)})"
    wanted = " or ".join(describe_spec(s) for s in specs)
    return True, f"no call to {wanted} (actual path {path_text(calls)})"


def check_max_steps(value: Any, calls: Sequence[ToolCall]) -> Verdict:
    ok = len(calls) <= value
    return ok, f"{len(calls)} tool calls, expected at most {value} (actual path {path_text(calls)})"


_FAMILY = {"trajectory": check_trajectory, "tool_count": check_tool_count,
           "not_tool_called": check_not_tool_called, "max_steps": check_max_steps}


def check_trajectory_family(kind: str, value: Any, calls: Sequence[ToolCall]) -> Finding:
    """Evaluate one of ``TRAJECTORY_CHECKS`` (a validated ``value``) on a run's calls."""
    passed, message = _FAMILY[kind](value, calls)
    return passed, message, summary(list(calls))
