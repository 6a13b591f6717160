"""Yao assertions evaluated through ``evaluate_turn`` (SPEC 4.2 table)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from farm.checks import evaluate_turn
from farm.checks.base import CheckContext
from farm.checks.spec import parse_assertions
from farm.models import CheckOutcome, Message, Reply, Turn


def outcomes(spec: Any, reply: Reply, ctx: CheckContext | None = None, turn_index: int = 1) -> list[CheckOutcome]:
    assertions, issues = parse_assertions(spec)
    assert issues == []
    turn = Turn(messages=[Message(content="hi")], assertions=assertions)
    return asyncio.run(evaluate_turn(turn, reply, ctx or CheckContext(), turn_index))


def passes(spec: dict[str, Any], reply: Reply) -> bool:
    [outcome] = outcomes(spec, reply)
    return outcome.passed


def text(value: str) -> Reply:
    return Reply(text=value)


def data(value: Any) -> Reply:
    return Reply(structure=value)


# ----------------------------------------------------------------------------------- equals


@pytest.mark.parametrize(
    ("expected", "reply", "ok"),
    [
        (5, data(5.0), True),
        (5.0, data(5), True),
        (5, text("5"), True),  # text parsed as JSON when the value is not a string
        (5, text("5.0"), True),
        ("5", data(5), False),
        (5, text('"5"'), False),
        ("5", text("5"), True),
        (True, data(1), False),
        (1, data(True), False),
        (False, data(0), False),
        (None, data(None), True),
        ({"a": 1, "b": [1, 2]}, data({"b": [1, 2], "a": 1}), True),  # key order irrelevant
        ([1, 2], data([2, 1]), False),  # array order matters
        ({"a": 1}, data({"a": 1, "b": 2}), False),
        ({"a": 1}, text('{"a": 1.0}'), True),
        ({"a": 1}, text('```json\n{"a": 1}\n```'), True),
        ({"a": 1}, text("not json"), False),
        ("hello", text("hello"), True),
        ("hello", text("hello "), False),
    ],
)
def test_equals_compares_json_values(expected: Any, reply: Reply, ok: bool) -> None:
    assert passes({"type": "equals", "value": expected}, reply) is ok


def test_equals_is_the_default_type_and_explains_the_difference() -> None:
    [outcome] = outcomes({"value": {"a": 1, "b": 2}}, data({"a": 1, "b": 3, "c": 4}))
    assert outcome.name == "equals"
    assert not outcome.passed
    assert outcome.message.startswith('expected {"a":1,"b":2}, got {"a":1,"b":3,"c":4}')
    assert "differing keys: b" in outcome.message and "extra keys: c" in outcome.message
    assert outcome.actual == {"a": 1, "b": 3, "c": 4}
    assert outcome.expected == {"a": 1, "b": 2}


def test_output_is_structure_when_present_else_text() -> None:
    reply = Reply(text="the text", structure={"k": "v"})
    assert passes({"type": "equals", "value": {"k": "v"}}, reply)
    assert not passes({"type": "contains", "value": "the text"}, reply)
    assert passes({"type": "contains", "value": "the text"}, Reply(text="the text"))


# --------------------------------------------------------------------------------- contains


@pytest.mark.parametrize(
    ("value", "reply", "ok"),
    [
        ("need_search", text("the need_search flag"), True),
        ("Need_search", text("the need_search flag"), False),  # case-sensitive
        (5, text("got 5 items"), True),
        ({"b": 1, "a": 2}, data({"x": {"a": 2, "b": 1}}), True),  # compact JSON, sorted keys
        ('"a":2', data({"a": 2}), True),
        ("a: 2", data({"a": 2}), False),
        (True, data({"ok": True}), True),
        ("x", Reply(), False),
    ],
)
def test_contains(value: Any, reply: Reply, ok: bool) -> None:
    assert passes({"type": "contains", "value": value}, reply) is ok
    assert passes({"type": "not_contains", "value": value}, reply) is (not ok)


def test_contains_failure_message_shows_both_sides() -> None:
    [outcome] = outcomes({"type": "contains", "value": "Paris"}, text("The capital is Rome."))
    assert outcome.message == "'Paris' not found in output 'The capital is Rome.'"


def test_not_contains_failure_message() -> None:
    [outcome] = outcomes({"type": "not_contains", "value": "error"}, text("an error occurred"))
    assert outcome.message == "output contains 'error'"


# ------------------------------------------------------------------------------ regex, type


@pytest.mark.parametrize(
    ("pattern", "reply", "ok"),
    [
        (r"\d{3}-\d{4}", text("call 555-1234 now"), True),
        (r"^\d+$", text("12a"), False),
        (r'"a":\s*1', data({"a": 1}), True),
        ("(?i)HELLO", text("hello"), True),
    ],
)
def test_regex_searches_the_output_as_text(pattern: str, reply: Reply, ok: bool) -> None:
    assert passes({"type": "regex", "value": pattern}, reply) is ok


@pytest.mark.parametrize(
    ("wanted", "reply", "ok"),
    [
        ("object", data({"a": 1}), True),
        ("array", data([1]), True),
        ("string", text('{"a": 1}'), True),  # a JSON-looking string is a string
        ("object", text('{"a": 1}'), False),
        ("number", data(1.5), True),
        ("number", data(True), False),  # booleans are not numbers
        ("integer", data(5), True),
        ("integer", data(5.0), True),  # integral floats are integers: JSON has one number type
        ("integer", data(5.5), False),
        ("integer", data(False), False),
        ("boolean", data(False), True),
        ("null", Reply(), True),
        ("null", text(""), False),
    ],
)
def test_type(wanted: str, reply: Reply, ok: bool) -> None:
    assert passes({"type": "type", "value": wanted}, reply) is ok


def test_type_failure_message() -> None:
    [outcome] = outcomes({"type": "type", "value": "object"}, text("plain"))
    assert outcome.message == "expected output of type object, got string 'plain'"


# -------------------------------------------------------------------------------- json_path


@pytest.mark.parametrize(
    ("path", "value", "reply", "ok"),
    [
        ("$.need_search", False, data({"need_search": False}), True),
        ("need_search", False, data({"need_search": False}), True),  # no $ needed
        ("$.a.b[0]", 7, data({"a": {"b": [7, 8]}}), True),
        ("a.b[1]", 7.0, data({"a": {"b": [7, 7]}}), True),
        ("$.confidence", 0.99, text('{"confidence": 0.99}'), True),
        ("$.x", 1, text('Here it is:\n```json\n{"x": 1}\n```\nbye'), True),
        ("$.x", 2, text("Result:\n```yaml\nx: 2\ny: [1, 2]\n```"), True),
        ("$.y", [1, 2], text("```yaml\nx: 2\ny: [1, 2]\n```"), True),
        ("$.x", 1, text('```json\n{"x": 1}\n```\n```json\n{"x": 2}\n```'), True),  # first block wins
        ("$.status", ["ok", "done"], data({"status": "done"}), True),  # membership
        ("$.status", ["ok", "done"], data({"status": "failed"}), False),
        ("$.tags", ["a", "b"], data({"tags": ["a", "b"]}), True),  # list compared whole
        ("$.tags", ["a", "b"], data({"tags": ["b", "a"]}), False),
        ("$.items[*].n", [1, 2], data({"items": [{"n": 1}, {"n": 2}]}), True),
        ("$.n", "5", data({"n": 5}), False),
        ("$.n", True, data({"n": 1}), False),
    ],
)
def test_json_path(path: str, value: Any, reply: Reply, ok: bool) -> None:
    assert passes({"type": "json_path", "path": path, "value": value}, reply) is ok


def test_json_path_not_found() -> None:
    [outcome] = outcomes({"type": "json_path", "path": "$.missing", "value": 1}, data({"a": 1}))
    assert not outcome.passed
    assert outcome.message == '$.missing not found in output {"a":1}'


def test_json_path_mismatch_message() -> None:
    [outcome] = outcomes({"type": "json_path", "path": "$.a", "value": 2}, data({"a": 1}))
    assert outcome.message == "$.a: expected 2, got 1"
    assert outcome.actual == 1
    assert outcome.expected == {"path": "$.a", "value": 2}


# ------------------------------------------------------------------ negate, messages, many


def test_negate_inverts_and_says_so() -> None:
    spec = {"type": "contains", "value": "error", "negate": True}
    assert passes(spec, text("all fine"))
    [outcome] = outcomes(spec, text("an error"))
    assert not outcome.passed
    assert outcome.name == "contains (negated)"
    assert outcome.message == "negated, but output contains 'error'"


def test_negated_json_path_not_found_passes() -> None:
    assert passes({"type": "json_path", "path": "$.error", "value": "x", "negate": True}, data({}))


def test_custom_message_replaces_the_failure_message() -> None:
    spec = {"type": "contains", "value": "Paris", "message": "should name the capital"}
    [outcome] = outcomes(spec, text("Rome"))
    assert outcome.message == "should name the capital"
    [ok] = outcomes(spec, text("Paris"))
    assert ok.passed and ok.message == ""


def test_every_assertion_is_evaluated_in_order() -> None:
    specs = [
        {"type": "json_path", "path": "$.need_search", "value": False},
        {"type": "json_path", "path": "$.confidence", "value": 0.99},
        {"type": "not_contains", "value": "error"},
        {"type": "type", "value": "object"},
    ]
    found = outcomes(specs, data({"need_search": True, "confidence": 0.5, "note": "error"}), turn_index=3)
    assert [o.passed for o in found] == [False, False, False, True]
    assert [o.turn for o in found] == [3, 3, 3, 3]
    joined = "; ".join(o.message for o in found if not o.passed)
    assert joined == (
        "$.need_search: expected false, got true; $.confidence: expected 0.99, got 0.5; output contains 'error'"
    )


def test_not_contains_message_in_a_joined_failure() -> None:
    found = outcomes([{"type": "contains", "value": "a"}, {"type": "contains", "value": "b"}], text("c"))
    assert [o.message for o in found] == ["'a' not found in output 'c'", "'b' not found in output 'c'"]


def test_actual_is_bounded() -> None:
    big = "x" * 50_000
    [outcome] = outcomes({"type": "contains", "value": "y"}, text(big))
    assert isinstance(outcome.actual, str)
    assert len(outcome.actual) < 5_000
    assert outcome.actual.endswith("chars]")
    assert len(outcome.message) < 400


def test_outcomes_round_trip_through_json() -> None:
    reply = text("```yaml\nwhen: 2024-01-01\nn: 1\n```")
    found = outcomes(
        [
            {"type": "json_path", "path": "$.when", "value": "2024-01-01"},
            {"type": "json_path", "path": "n", "value": 2},
        ],
        reply,
    )
    assert [o.passed for o in found] == [True, False]
    for outcome in found:
        assert CheckOutcome.model_validate_json(outcome.model_dump_json()) == outcome


def test_no_checks_no_outcomes() -> None:
    turn = Turn(messages=[Message(content="hi")])
    assert asyncio.run(evaluate_turn(turn, text("x"), CheckContext(), 1)) == []
