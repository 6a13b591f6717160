"""The ``tool_called`` and ``tool_result`` checks on a reply's tool calls.

A call matches a wanted name when the call's name equals it or ends in ``__name`` or
``.name`` (namespaced tools such as ``mcp__github__search`` or ``github.search``); never on a
mere substring. Arguments given as a JSON string are parsed before matching.
"""

from __future__ import annotations

import re
from typing import Any

from farm.checks.extract import json_equal, parse_json_text, safe_repr, to_text
from farm.models import ToolCall

__all__ = ["call_matches", "check_tool_called", "check_tool_result", "describe_spec", "match_partial", "name_matches",
           "summary"]

Finding = tuple[bool, str, Any]
"""``(passed, message, actual)``."""


def name_matches(call_name: str, wanted: str) -> bool:
    """Equal, or namespaced with ``__`` or ``.`` as the last separator."""
    return call_name == wanted or call_name.endswith(f"__{wanted}") or call_name.endswith(f".{wanted}")


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        ok, parsed = parse_json_text(value)
        if ok:
            return parsed
    return value


def match_partial(expected: Any, actual: Any) -> bool:
    """Objects match on the listed keys only (recursively), arrays element by element,
    ``regex:``-prefixed strings as a search, everything else as JSON values."""
    if isinstance(expected, str) and expected.startswith("regex:"):
        text = to_text(actual)
        return re.search(expected[len("regex:") :], text) is not None
    if isinstance(expected, dict | list):
        actual = _decoded(actual)
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return False
        return all(k in actual and match_partial(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(match_partial(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return json_equal(expected, actual)


def summary(calls: list[ToolCall]) -> list[dict[str, Any]]:
    """The calls as ``{name, arguments}`` (arguments parsed): what a check saw."""
    return [{"name": c.name, "arguments": _decoded(c.arguments)} for c in calls]


def call_matches(spec: Any, call: ToolCall) -> bool:
    """A tool name, or ``{name, arguments}`` (arguments as a subset), matches ``call``."""
    if isinstance(spec, str):
        return name_matches(call.name, spec)
    if not isinstance(spec, dict) or not name_matches(call.name, str(spec.get("name", ""))):
        return False
    return "arguments" not in spec or match_partial(spec["arguments"], _decoded(call.arguments))


def check_tool_called(value: Any, calls: list[ToolCall]) -> Finding:
    """A name, a list (any of them), or ``{name, arguments}`` (arguments as a subset)."""
    specs = value if isinstance(value, list) else [value]
    names = ", ".join(c.name for c in calls) or "none"
    for spec in specs:
        hit = next((c for c in calls if call_matches(spec, c)), None)
        if hit is not None:
            return True, f"{hit.name} was called", summary(calls)
    wanted = " or ".join(describe_spec(s) for s in specs)
    return False, f"no call to {wanted} (calls: {names})", summary(calls)


def describe_spec(spec: Any) -> str:
    """``'search'``, or ``'search' with arguments {...}``."""
    if isinstance(spec, dict) and "arguments" in spec:
        return f"{spec.get('name')!r} with arguments {safe_repr(spec['arguments'])}"
    if isinstance(spec, dict):
        return repr(spec.get("name"))
    return repr(spec)


def check_tool_result(value: Any, calls: list[ToolCall]) -> Finding:
    """The first call matching ``value.tool`` succeeded and its result matches ``value.result``."""
    spec = value if isinstance(value, dict) else {"tool": value}
    tool = str(spec.get("tool", ""))
    call = next((c for c in calls if name_matches(c.name, tool)), None)
    if call is None:
        names = ", ".join(c.name for c in calls) or "none"
        return False, f"{tool!r} was not called (calls: {names})", summary(calls)
    found = {"name": call.name, "result": call.result, "error": call.error}
    if call.error:
        return False, f"{call.name} failed: {safe_repr(call.error)}", found
    if "result" in spec and not match_partial(spec["result"], call.result):
        shown = f"expected {safe_repr(spec['result'])}, got {safe_repr(call.result)}"
        return False, f"result of {call.name} does not match: {shown}", found
    return True, f"{call.name} succeeded" + (" with a matching result" if "result" in spec else ""), found
