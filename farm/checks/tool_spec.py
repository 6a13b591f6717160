"""Load-time validation of the checks on tool calls: ``tool_called`` / ``not_tool_called`` values
and the trajectory checks (``trajectory``, ``tool_count``, ``max_steps``; SPEC 21). A JSONL
``assert`` gives them a ``value``; a HOCON ``response`` block gives the value under the check's key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from farm.checks.extract import json_type_name
from farm.checks.hints import one_of, suggest
from farm.checks.trajectory import MATCH_MODES

__all__ = ["Issue", "tool_called_issues", "tool_check_issues", "tool_check_validator"]

Issue = tuple[str, str]
"""``(key path, message)``: one thing wrong, located inside its case."""

Validator = Callable[[dict[str, Any], str, str], list[Issue]]
_TRAJECTORY_KEYS = ("tools", "match")
_COUNT_KEYS = ("tool", "min", "max")
_NEED_A_LIST = frozenset({"in_order", "superset"})
"""Modes an empty ``tools`` list would make pass whatever the run did."""


def tool_called_issues(raw: dict[str, Any], where: str) -> list[Issue]:
    """A ``tool_called`` assertion's ``value`` (absent: reported as missing elsewhere)."""
    return tool_names_issues(raw["value"], f"{where}.value") if "value" in raw else []


def tool_names_issues(value: Any, at: str) -> list[Issue]:
    """A tool name, ``{name, arguments}``, or a non-empty list of them."""
    if isinstance(value, list):
        if not value:
            return [(at, "an empty list names no tool")]
        return [issue for i, item in enumerate(value) for issue in _tool_spec_issues(item, f"{at}[{i}]")]
    return _tool_spec_issues(value, at)


def _tool_spec_issues(value: Any, at: str) -> list[Issue]:
    if isinstance(value, str):
        return [] if value.strip() else [(at, "empty tool name")]
    if not isinstance(value, dict):
        return [(at, f"must be a tool name, a list of names or {{name, arguments}}, got {json_type_name(value)}")]
    issues = [(f"{at}.{k}", "unknown key (expected name, arguments)") for k in value if k not in ("name", "arguments")]
    if not isinstance(value.get("name"), str) or not value["name"].strip():
        issues.append((f"{at}.name", "missing: the tool name (a string)"))
    if "arguments" in value and not isinstance(value["arguments"], dict):
        issues.append((f"{at}.arguments", f"must be an object, got {json_type_name(value['arguments'])}"))
    return issues



def tool_check_validator(kind: str) -> Validator:
    """The ``farm.checks.spec`` validator of trajectory check ``kind`` (its ``value``)."""
    def validate(raw: dict[str, Any], where: str, base_dir: str) -> list[Issue]:
        return tool_check_issues(kind, raw["value"], f"{where}.value") if "value" in raw else []
    return validate


def tool_check_issues(kind: str, value: Any, at: str) -> list[Issue]:
    """What is wrong with the value of trajectory check ``kind`` found at ``at``."""
    if kind == "not_tool_called":
        return tool_names_issues(value, at)
    if kind == "max_steps":
        return [] if _count(value) else [(at, f"must be a whole number ≥ 0 (tool calls), got {_shown(value)}")]
    if kind == "tool_count":
        return _tool_count_issues(value, at)
    return _trajectory_issues(value, at)


def _trajectory_issues(value: Any, at: str) -> list[Issue]:
    if not isinstance(value, dict):
        return [(at, f'must be an object {{"tools": [...], "match": "strict"}}, got {json_type_name(value)}')]
    issues = _unknown_keys(value, _TRAJECTORY_KEYS, at)
    mode = value.get("match", "strict")
    if mode not in MATCH_MODES:
        issues.append((f"{at}.match", f"unknown match {mode!r} ({one_of(MATCH_MODES)})"
                       + suggest(str(mode), MATCH_MODES)))
    tools = value.get("tools")
    if not isinstance(tools, list):
        issues.append((f"{at}.tools", f"missing: the expected calls (a list of names or {{name, arguments}}), "
                       f"got {json_type_name(tools)}"))
    elif not tools and mode in _NEED_A_LIST:
        issues.append((f"{at}.tools", f"an empty list: {mode} would pass whatever the run called"))
    else:
        issues += [i for n, item in enumerate(tools) for i in _tool_spec_issues(item, f"{at}.tools[{n}]")]
    return issues


def _tool_count_issues(value: Any, at: str) -> list[Issue]:
    if not isinstance(value, dict):
        return [(at, f'must be an object {{"tool": name or "*", "min": n, "max": n}}, got {json_type_name(value)}')]
    issues = _unknown_keys(value, _COUNT_KEYS, at)
    tool = value.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        issues.append((f"{at}.tool", "missing: the tool name (a string; \"*\" counts every call)"))
    if "min" not in value and "max" not in value:
        issues.append((at, "give min, max or both: without them it would count and test nothing"))
    for key in ("min", "max"):
        if key in value and not _count(value[key]):
            issues.append((f"{at}.{key}", f"must be a whole number ≥ 0, got {_shown(value[key])}"))
    low, high = value.get("min"), value.get("max")
    if isinstance(low, int) and isinstance(high, int) and _count(low) and _count(high) and low > high:
        issues.append((at, f"min {low} is above max {high}: no run could pass"))
    return issues


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, int | float) and not isinstance(value, bool) else json_type_name(value)


def _unknown_keys(value: dict[str, Any], keys: tuple[str, ...], at: str) -> list[Issue]:
    return [(f"{at}.{k}", f"unknown key ({one_of(keys)}){suggest(k, keys)}")
            for k in value if k not in keys]
