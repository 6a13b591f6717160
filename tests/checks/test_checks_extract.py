"""JSON-value helpers: comparison, text form, extraction from agent text, JSONPath, bounds."""

from __future__ import annotations

from typing import Any

import pytest

from farm.checks.extract import (
    MISSING,
    bound_actual,
    compile_path,
    extract_data,
    find_path,
    json_equal,
    json_type_matches,
    safe_repr,
    to_text,
)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (5, 5.0, True),
        (0, -0.0, True),
        ("5", 5, False),
        (True, 1, False),
        (False, 0, False),
        (True, True, True),
        (None, None, True),
        (None, False, False),
        ("", None, False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": True}, {"a": 1}, False),
        ([1, 2], [2, 1], False),
        ([1, [2, {"x": 3}]], [1.0, [2, {"x": 3.0}]], True),
        ([1], (1,), True),
        ({"a": 1}, [["a", 1]], False),
        ("abc", "abc", True),
    ],
)
def test_json_equal(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        (None, ""),
        (5, "5"),
        (True, "true"),
        ({"b": 1, "a": [1, "é"]}, '{"a":[1,"é"],"b":1}'),
    ],
)
def test_to_text(value: Any, text: str) -> None:
    assert to_text(value) == text


@pytest.mark.parametrize(
    ("text", "data"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]\n", [1, 2]),
        ('Sure!\n```json\n{"a": 1}\n```', {"a": 1}),
        ("```JSON\n[true]\n```", [True]),
        ("Here:\n```yaml\na: 1\nb: [x, y]\n```\n", {"a": 1, "b": ["x", "y"]}),
        ("```yml\n- 1\n- 2\n```", [1, 2]),
        ('```\n{"plain": "fence"}\n```', {"plain": "fence"}),
        ('```python\nprint(1)\n```\n```json\n{"second": 2}\n```', {"second": 2}),
        ('```json\n{broken\n```\n```json\n{"ok": 1}\n```', {"ok": 1}),
        ("no data here", "no data here"),
        ("```yaml\nwhen: 2024-01-01\n1: one\n```", {"when": "2024-01-01", "1": "one"}),  # kept JSON-safe
    ],
)
def test_extract_data(text: str, data: Any) -> None:
    assert extract_data(text) == data


def test_paths() -> None:
    doc = {"a": {"b": [7, 8]}, "items": [{"n": 1}, {"n": 2}], "x": None}
    assert find_path(doc, "a.b[0]") == 7
    assert find_path(doc, "$.a.b[1]") == 8
    assert find_path(doc, "$.items[*].n") == [1, 2]
    assert find_path(doc, "$.x") is None
    assert find_path(doc, "$.nope") is MISSING
    assert find_path(doc, "$") == doc
    for bad in ("", "$.a[", "a b"):
        with pytest.raises(ValueError):
            compile_path(bad)


@pytest.mark.parametrize(
    ("value", "wanted", "ok"),
    [
        (1, "integer", True),
        (1.0, "integer", True),
        (1.5, "integer", False),
        (float("inf"), "integer", False),
        (True, "integer", False),
        (True, "number", False),
        (2, "number", True),
        ("1", "string", True),
        ([], "array", True),
        ({}, "object", True),
        (None, "null", True),
    ],
)
def test_json_types(value: Any, wanted: str, ok: bool) -> None:
    assert json_type_matches(value, wanted) is ok


def test_bounds() -> None:
    assert safe_repr("short") == "'short'"
    long = safe_repr("x" * 1000)
    assert len(long) < 260 and "chars]" in long
    assert bound_actual({"a": 1}) == {"a": 1}
    big = bound_actual({"k": "v" * 10_000})
    assert isinstance(big, str) and len(big) < 4100
    assert bound_actual(MISSING) is None
