"""neuro-san stock tests through ``evaluate_turn`` (SPEC 4.2 second table)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from farm.checks import evaluate_turn
from farm.checks.base import CheckContext
from farm.checks.spec import parse_response
from farm.models import CheckOutcome, Reply, Turn


def run(response: dict[str, Any], reply: Reply, compat: bool = False) -> list[CheckOutcome]:
    tests, issues = parse_response(response, "response")
    assert issues == []
    turn = Turn(messages=[], stock_tests=tests)
    return asyncio.run(evaluate_turn(turn, reply, CheckContext(neuro_san_compat=compat), 2))


def one(response: dict[str, Any], reply: Reply, compat: bool = False) -> CheckOutcome:
    [outcome] = run(response, reply, compat)
    return outcome


ANSWER = Reply(
    text="The Beatles recorded Yellow Submarine in 1966.",
    sly_data={"equals": 19481.0, "user": {"name": "ann", "age": 30}, "tags": ["x", "y"], "a.b": "dotted"},
    structure={"answer": "Beatles", "running_cost": 3, "items": [[1, 2], [3]], "meta": {"k": 1}},
)


@pytest.mark.parametrize(
    ("response", "ok"),
    [
        ({"text": {"keywords": "Beatles"}}, True),
        ({"text": {"keywords": ["Beatles", "1966"]}}, True),  # list ANDs
        ({"text": {"keywords": ["Beatles", "Stones"]}}, False),
        ({"text": {"keywords": "beatles"}}, False),  # case-sensitive
        ({"text": {"KEYWORDS": "Beatles"}}, True),  # test names are case-insensitive
        ({"text": {"keywords": 1966}}, True),  # a number is looked for as its text
        ({"text": {"not_keywords": ["Stones", "Who"]}}, True),
        ({"text": {"not_keywords": ["Stones", "Beatles"]}}, False),
        ({"sly_data": {"equals": {"value": 19481}}}, True),  # 19481 == 19481.0
        ({"sly_data": {"equals": {"value": [19481.0]}}}, True),
        ({"sly_data": {"equals": {"value": "19481"}}}, False),
        ({"sly_data": {"equals": {"not_value": 1}}}, True),
        ({"sly_data": {"user": {"name": {"value": "ann"}}}}, True),  # nested blocks recurse
        ({"sly_data": {"user.name": {"value": "ann"}}}, True),  # a dotted key is a path
        ({"sly_data": {"a.b": {"value": "dotted"}}}, True),  # ...or a literal dotted key
        ({"sly_data": {"user": {"keywords": "age"}}}, True),  # dict key membership
        ({"sly_data": {"user": {"keywords": "ann"}}}, False),  # values are not keys
        ({"sly_data": {"tags": {"keywords": "y"}}}, True),  # list element
        ({"sly_data": {"tags": {"keywords": "xy"}}}, False),
        ({"sly_data": {"tags": {"value": [["x", "y"]]}}}, True),  # a list in a list compares the whole list
        ({"sly_data": {"tags": {"value": [["y", "x"]]}}}, False),
        ({"sly_data": {"keywords": "user"}}, True),  # a test directly under sly_data looks at all of it
        ({"structure": {"answer": {"keywords": "Beatles"}, "running_cost": {"value": 3.0}}}, True),
        ({"structure": {"items": {"keywords": [[1, 2]]}}}, True),
        ({"structure": {"items": {"keywords": [[2, 1]]}}}, False),
        ({"structure": {"meta": {"k": {"value": True}}}}, False),  # true is not 1
    ],
)
def test_stock_tests(response: dict[str, Any], ok: bool) -> None:
    assert all(o.passed for o in run(response, ANSWER)) is ok


def test_outcome_names_and_turn() -> None:
    found = run(
        {
            "text": {"keywords": "Beatles"},
            "sly_data": {"equals": {"value": 19481.0}},
            "structure": {"answer": {"keywords": "Beatles"}},
        },
        ANSWER,
    )
    assert [o.name for o in found] == ["text.keywords", "sly_data.equals.value", "structure.answer.keywords"]
    assert all(o.turn == 2 and o.passed for o in found)
    assert found[1].actual == 19481.0


def test_list_values_report_every_failing_value() -> None:
    outcome = one({"text": {"keywords": ["Stones", "Beatles", "Who"]}}, ANSWER)
    assert not outcome.passed
    assert outcome.message.count("not found in text") == 2
    assert outcome.message.startswith("'Stones' not found in text 'The Beatles")
    assert outcome.expected == ["Stones", "Beatles", "Who"]


# ------------------------------------------------------------------------------- ordering

ORDER_VECTORS = [
    # test, actual, given, documented, compat
    ("less", 3, 5, True, False),
    ("less", 5, 5, False, False),
    ("less", 7, 5, False, True),
    ("not_less", 5, 5, True, True),
    ("not_less", 3, 5, False, True),
    ("not_less", 7, 5, True, False),
    ("greater", 7, 5, True, False),
    ("greater", 3, 5, False, True),
    ("greater", 5, 5.0, False, False),
    ("not_greater", 5, 5, True, True),
    ("not_greater", 7, 5, False, True),
    ("not_greater", 3, 5, True, False),
    ("less", "apple", "banana", True, False),  # strings lexicographically
    ("greater", "b", "abc", True, False),
    ("less", "Z", "a", True, False),
]


@pytest.mark.parametrize(("test", "actual", "given", "documented", "compat"), ORDER_VECTORS)
def test_ordering_documented_and_compat(test: str, actual: Any, given: Any, documented: bool, compat: bool) -> None:
    reply = Reply(sly_data={"n": actual})
    response = {"sly_data": {"n": {test: given}}}
    assert one(response, reply).passed is documented
    assert one(response, reply, compat=True).passed is compat


def test_ordering_message_names_the_semantics() -> None:
    reply = Reply(sly_data={"n": 7})
    assert one({"sly_data": {"n": {"less": 5}}}, reply).message == (
        "less: expected actual < 5 (documented semantics), got 7"
    )
    assert one({"sly_data": {"n": {"less": 9}}}, reply, compat=True).message == (
        "less: expected actual > 9 (neuro-san-compat semantics), got 7"
    )


@pytest.mark.parametrize("test", ["less", "not_less", "greater", "not_greater"])
def test_mismatched_types_fail_cleanly_both_ways(test: str) -> None:
    outcome = one({"sly_data": {"n": {test: 5}}}, Reply(sly_data={"n": "7"}))
    assert not outcome.passed
    assert outcome.message == f"{test}: cannot compare string '7' with number 5"
    assert not one({"sly_data": {"n": {test: 5}}}, Reply(sly_data={"n": True})).passed
    assert one({"text": {test: "a"}}, Reply(text="b")).passed is (test in ("greater", "not_less"))


@pytest.mark.parametrize(
    ("actual", "given", "message"),
    [
        (5, "x", "cannot look for a keyword in number 5"),
        ({"a": 1}, 1, "object keys are strings; cannot look for number 1"),
        ("text", None, "cannot look for null null in a string"),
    ],
)
def test_keyword_type_mismatch(actual: Any, given: Any, message: str) -> None:
    for test in ("keywords", "not_keywords"):
        outcome = one({"sly_data": {"v": {test: given}}}, Reply(sly_data={"v": actual}))
        assert not outcome.passed
        assert outcome.message == message


# ---------------------------------------------------------------------------- missing data


def test_missing_key_names_the_key_for_every_test() -> None:
    for test in ("value", "not_value", "keywords", "not_keywords"):
        outcome = one({"sly_data": {"user": {"email": {test: "x"}}}}, ANSWER)
        assert not outcome.passed
        assert outcome.name == f"sly_data.user.email.{test}"
        assert outcome.message == "key 'user.email' is missing (keys there: name, age)"


def test_missing_parts_of_the_reply() -> None:
    assert one({"text": {"keywords": "x"}}, Reply(structure={"a": 1})).message == "the reply has no text"
    assert one({"sly_data": {"a": {"value": 1}}}, Reply(text="x")).message == "the reply has no sly_data"
    assert one({"structure": {"a": {"value": 1}}}, Reply(text="x")).message == "the reply has no structure"
    through_scalar = one({"structure": {"answer": {"x": {"value": 1}}}}, ANSWER)
    assert through_scalar.message == "key 'answer.x' is missing (answer is string)"


def test_list_index_in_path() -> None:
    assert one({"structure": {"items.0": {"value": [[1, 2]]}}}, ANSWER).passed
    assert not one({"structure": {"items.5": {"value": 1}}}, ANSWER).passed
