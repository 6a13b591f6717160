"""``tool_called`` and ``tool_result`` (SPEC 4.2 table)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from farm.checks import evaluate_turn
from farm.checks.base import CheckContext
from farm.checks.spec import parse_assertions
from farm.checks.tools import match_partial, name_matches
from farm.models import CheckOutcome, Reply, ToolCall, Turn

CALLS = [
    ToolCall(name="mcp__github__search_issues", arguments='{"q": "bug", "limit": 5}', result={"count": 2}),
    ToolCall(name="weather.get_forecast", arguments={"city": "Paris", "days": 3}, result="Sunny, 21C"),
    ToolCall(name="calculator", arguments={"expr": "2+2"}, error="division by zero"),
    ToolCall(name="lookup", arguments={}, result='{"user": {"id": 7, "name": "ann", "tags": ["a"]}}'),
]


def check(spec: dict[str, Any], calls: list[ToolCall] = CALLS) -> CheckOutcome:
    assertions, issues = parse_assertions(spec)
    assert issues == []
    turn = Turn(messages=[], assertions=assertions)
    [outcome] = asyncio.run(evaluate_turn(turn, Reply(text="done", tool_calls=calls), CheckContext(), 1))
    return outcome


@pytest.mark.parametrize(
    ("call", "wanted", "ok"),
    [
        ("search", "search", True),
        ("mcp__github__search", "search", True),
        ("github.search", "search", True),
        ("research", "search", False),  # never a mere substring
        ("search_all", "search", False),
        ("mcp__github__search", "github__search", True),
        ("search.", "search", False),
    ],
)
def test_name_matching(call: str, wanted: str, ok: bool) -> None:
    assert name_matches(call, wanted) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("search_issues", True),
        ("get_forecast", True),
        ("forecast", False),
        ("issues", False),
        (["nope", "calculator"], True),  # any of them
        (["nope", "other"], False),
        ({"name": "get_forecast", "arguments": {"city": "Paris"}}, True),  # subset
        ({"name": "get_forecast", "arguments": {"city": "Rome"}}, False),
        ({"name": "get_forecast", "arguments": {"days": 3.0}}, True),
        ({"name": "get_forecast", "arguments": {"days": "3"}}, False),
        ({"name": "search_issues", "arguments": {"q": "bug"}}, True),  # JSON-string arguments parsed
        ({"name": "search_issues", "arguments": {"q": "bug", "extra": 1}}, False),
        ({"name": "search_issues"}, True),
    ],
)
def test_tool_called(value: Any, ok: bool) -> None:
    assert check({"type": "tool_called", "value": value}).passed is ok


def test_tool_called_failure_lists_the_calls() -> None:
    outcome = check({"type": "tool_called", "value": "forecast"})
    assert outcome.message == (
        "no call to 'forecast' (calls: mcp__github__search_issues, weather.get_forecast, calculator, lookup)"
    )
    assert outcome.actual[1] == {"name": "weather.get_forecast", "arguments": {"city": "Paris", "days": 3}}


def test_tool_called_with_no_calls() -> None:
    assert check({"type": "tool_called", "value": "x"}, calls=[]).message == "no call to 'x' (calls: none)"


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ({"tool": "search_issues"}, True),
        ({"tool": "search_issues", "result": {"count": 2}}, True),
        ({"tool": "search_issues", "result": {"count": 2.0}}, True),
        ({"tool": "search_issues", "result": {"count": 3}}, False),
        ({"tool": "get_forecast", "result": "regex:^Sunny"}, True),
        ({"tool": "get_forecast", "result": "regex:Rain"}, False),
        ({"tool": "get_forecast", "result": "Sunny"}, False),  # plain strings compare whole
        ({"tool": "get_forecast", "result": "Sunny, 21C"}, True),
        ({"tool": "calculator"}, False),  # errored
        ({"tool": "lookup", "result": {"user": {"id": 7}}}, True),  # partial, recursive, JSON string parsed
        ({"tool": "lookup", "result": {"user": {"name": "regex:^a"}}}, True),
        ({"tool": "lookup", "result": {"user": {"id": "7"}}}, False),
        ({"tool": "lookup", "result": {"user": {"tags": ["a"]}}}, True),
        ({"tool": "lookup", "result": {"user": {"tags": []}}}, False),
        ({"tool": "missing"}, False),
        ({"tool": "search"}, False),
    ],
)
def test_tool_result(value: Any, ok: bool) -> None:
    assert check({"type": "tool_result", "value": value}).passed is ok


def test_tool_result_messages() -> None:
    assert check({"type": "tool_result", "value": {"tool": "calculator"}}).message == (
        "calculator failed: 'division by zero'"
    )
    assert check({"type": "tool_result", "value": {"tool": "search_issues", "result": {"count": 3}}}).message == (
        'result of mcp__github__search_issues does not match: expected {"count":3}, got {"count":2}'
    )


def test_match_partial_vectors() -> None:
    assert match_partial({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}, "d": 3})
    assert not match_partial({"a": 1}, [1])
    assert not match_partial({"a": True}, {"a": 1})
    assert match_partial([{"x": 1}], [{"x": 1, "y": 2}])
    assert match_partial("regex:\\d+", 42)
