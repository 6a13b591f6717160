"""Load-time validation of check specs: every mistake is an issue with its key path."""

from __future__ import annotations

from typing import Any

import pytest

from farm.checks.spec import parse_assertions, parse_response


@pytest.mark.parametrize(
    ("spec", "issue"),
    [
        ("contains", ("assert", "'contains' is Yao's shorthand, a check type without a value: write "
                                '{"type": "contains", "value": ...} (every type but script needs a value)')),
        ("script", ("assert", "'script' is Yao's shorthand, a check type alone: write "
                              '{"type": "script", "script": ...}')),
        ("anything", ("assert", "must be an object or a list of objects, got string")),
        ([{"type": "contains", "value": "x"}, "bad"], ("assert[1]", "must be an object, got string")),
        (
            {"type": "contians", "value": "x"},
            (
                "assert.type",
                "unknown check 'contians' (expected one of: equals, contains, not_contains, regex, type, "
                "json_path, script, agent, tool_called, tool_result, trajectory, tool_count, not_tool_called, "
                "max_steps) (did you mean 'contains'?)",
            ),
        ),
        ({"type": 3}, ("assert.type", "must be a string, got number")),
        ({"type": "contains", "valeu": "x"}, ("assert.valeu", "unknown key (expected one of: type, value, path, "
                                              "script, use, options, message, negate) (did you mean 'value'?)")),
        ({"type": "contains"}, ("assert.value", "missing: contains needs a value")),
        ({"type": "regex", "value": "("}, ("assert.value", "invalid regex '(': missing ), unterminated subpattern "
                                           "at position 0")),
        ({"type": "regex", "value": 5}, ("assert.value", "a regex must be a string, got number")),
        ({"type": "type", "value": "Object"}, ("assert.value", "not a JSON type: 'Object' (expected one of: string, "
                                               "number, integer, boolean, array, object, null) (did you mean "
                                               "'object'?)")),
        ({"type": "json_path", "value": 1}, ("assert.path", "missing: a json_path check needs a path")),
        ({"type": "json_path", "path": "$.a[", "value": 1}, ("assert.path", "invalid JSONPath '$.a[': Parse error "
                                                             "near the end of string!")),
        ({"type": "json_path", "path": 1, "value": 1}, ("assert.path", "must be a string, got number")),
        ({"type": "contains", "value": "x", "path": "$.a"}, ("assert.path", "only used by json_path checks, not by "
                                                             "contains")),
        ({"type": "contains", "value": "x", "negate": "yes"}, ("assert.negate", "must be true or false, got string")),
        ({"type": "contains", "value": "x", "message": 5}, ("assert.message", "must be a string, got number")),
        ({"type": "script"}, ("assert.script", "missing: a script check needs script (module:function or "
                                               "file.py:function)")),
        ({"type": "agent", "value": ""}, ("assert.value", "the judge needs a criterion")),
        ({"type": "agent", "value": "x", "use": 5}, ("assert.use", "must be a connector id or agents:<agent id>")),
        ({"type": "tool_called", "value": 5}, ("assert.value", "must be a tool name, a list of names or {name, "
                                                "arguments}, got number")),
        ({"type": "tool_called", "value": []}, ("assert.value", "an empty list names no tool")),
        ({"type": "tool_called", "value": [{"arguments": {}}]}, ("assert.value[0].name", "missing: the tool name "
                                                                 "(a string)")),
        ({"type": "tool_called", "value": {"name": "x", "arguments": "a=1"}}, ("assert.value.arguments",
                                                                               "must be an object, got string")),
        ({"type": "tool_result", "value": "x"}, ("assert.value", "must be an object {tool, result}, got string")),
        ({"type": "tool_result", "value": {"tool": "x", "reslt": 1}}, ("assert.value.reslt", "unknown key "
                                                                       "(expected tool, result)")),
        ({"type": "tool_result", "value": {"tool": "x", "result": {"a": "regex:("}}}, (
            "assert.value.result.a", "invalid regex '(': missing ), unterminated subpattern at position 0")),
    ],
)  # fmt: skip
def test_assertion_issues(spec: Any, issue: tuple[str, str]) -> None:
    assertions, issues = parse_assertions(spec)
    assert issue in issues
    assert assertions == [] or isinstance(spec, list)


def test_every_problem_of_every_assertion_is_reported() -> None:
    _, issues = parse_assertions(
        [{"type": "regex", "value": "(", "negate": 1}, {"type": "json_path"}, {"type": "equals", "value": 1}]
    )
    assert [key for key, _ in issues] == ["assert[0].negate", "assert[0].value", "assert[1].value", "assert[1].path"]


def test_valid_assertions_keep_what_was_written() -> None:
    assertions, issues = parse_assertions(
        [{"value": None}, {"type": "json_path", "path": "a.b[0]", "value": [1], "negate": True, "message": "m"}]
    )
    assert issues == []
    first, second = assertions
    assert (first.type, first.value, first.has_value, first.where) == ("equals", None, True, "assert[0]")
    assert (second.path, second.negate, second.message, second.where) == ("a.b[0]", True, "m", "assert[1]")
    assert parse_assertions([]) == ([], [])


@pytest.mark.parametrize(
    ("response", "issue"),
    [
        ("x", ("r", "must be an object, got string")),
        ({"txt": {"keywords": "a"}}, ("r.txt", "unknown key (expected one of: text, sly_data, structure, trajectory, "
                                      "tool_count, not_tool_called, max_steps) "
                                      "(did you mean 'text'?)")),
        ({"text": "Beatles"}, ("r.text", "not a test block: expected an object of tests, got string")),
        ({"text": {}}, ("r.text", "empty test block: it would test nothing")),
        ({"sly_data": {}}, ("r.sly_data", "empty test block: it would test nothing")),
        ({"structure": {"answer": {}}}, ("r.structure.answer", "empty test block: it would test nothing")),
        ({"text": {"kewords": "a"}}, ("r.text.kewords", "unknown stock test 'kewords' (expected one of: value, "
                                      "not_value, less, not_less, greater, not_greater, keywords, not_keywords, "
                                      "gist, not_gist) (did you mean 'keywords'?)")),
        ({"text": {"keywords": []}}, ("r.text.keywords", "empty list of values: it would test nothing")),
        ({"text": {"keywords": {"a": 1}}}, ("r.text.keywords", "the text is a string: give a value or a list of "
                                            "values, not an object")),
        ({"sly_data": {"answer": 3}}, ("r.sly_data.answer", "not a test block: 'answer' is not a stock test and "
                                       "its value is not an object of tests")),
        ({"sly_data": {"value": {"x": 1}}}, ("r.sly_data.value.x", "not a test block: 'x' is not a stock test and "
                                             "its value is not an object of tests (to compare with a whole "
                                             "object, wrap it in a list: value = [{...}])")),
        ({"structure": {"n": {"less": True}}}, ("r.structure.n.less", "less compares numbers or strings, got "
                                                "boolean")),
        ({"structure": {"a..b": {"value": 1}}}, ("r.structure.a..b", "empty key segment in a dotted key")),
    ],
)  # fmt: skip
def test_response_issues(response: Any, issue: tuple[str, str]) -> None:
    _tests, issues = parse_response(response, "r")
    assert issue in issues


def test_empty_response_means_no_tests() -> None:
    assert parse_response({}, "r") == ([], [])
    assert parse_response(None, "r") == ([], [])


def test_response_tests_keep_their_key_paths() -> None:
    tests, issues = parse_response(
        {"text": {"Keywords": ["a", ["b"]]}, "structure": {"x.y": {"z": {"value": 1}, "less": 4}}}, "r"
    )
    assert issues == []
    assert [(t.target, t.key, t.test, t.values, t.where) for t in tests] == [
        ("text", [], "keywords", ["a", ["b"]], "r.text.Keywords"),
        ("structure", ["x", "y", "z"], "value", [1], "r.structure.x.y.z.value"),
        ("structure", ["x", "y"], "less", [4], "r.structure.x.y.less"),
    ]
