"""Load-time validation of check specs: Yao ``assert`` entries and neuro-san ``response`` blocks.

Both formats refuse what their original tools skip silently at run time (SPEC 4.2): a typo
must be an input error, never a check that tests nothing. Parsers return the checks they
could build plus a list of ``(key path, message)`` issues; the suite loaders add file and
line and raise one ``SuiteError`` with every issue.
"""

from __future__ import annotations

import re
from typing import Any

from farm.checks.extract import JSON_TYPES, compile_path, json_type_name
from farm.checks.hints import one_of, suggest
from farm.checks.script import resolve_script
from farm.checks.tool_spec import Issue, tool_called_issues, tool_check_issues, tool_check_validator
from farm.checks.trajectory import TRAJECTORY_CHECKS
from farm.models import Assertion, StockTest

__all__ = [
    "ASSERTION_KEYS",
    "RESPONSE_KEYS",
    "STOCK_TESTS",
    "YAO_TYPES",
    "Issue",
    "forget_parsed_assertions",
    "parse_assertions",
    "parse_response",
    "suggest",
]

YAO_TYPES = (
    "equals", "contains", "not_contains", "regex", "type", "json_path",
    "script", "agent", "tool_called", "tool_result", *TRAJECTORY_CHECKS,
)  # fmt: skip
"""Every Yao assertion ``type``."""

STOCK_TESTS = (
    "value", "not_value", "less", "not_less", "greater", "not_greater",
    "keywords", "not_keywords", "gist", "not_gist",
)  # fmt: skip
"""Every neuro-san stock test (names are case-insensitive in files)."""

ASSERTION_KEYS = ("type", "value", "path", "script", "use", "options", "message", "negate")
RESPONSE_KEYS = ("text", "sly_data", "structure")

_NEEDS_VALUE = frozenset(YAO_TYPES) - {"script"}
_KEY_OWNER = {"path": "json_path", "script": "script", "use": "agent", "options": "agent"}
_JUDGE_OPTION_KEYS = ("connector", "metadata")
_ORDERED_TESTS = frozenset({"less", "not_less", "greater", "not_greater"})


# ------------------------------------------------------------------------------ Yao assertions


_PARSED: dict[tuple[str, str, str], tuple[Assertion, ...]] = {}
"""Assertions already built, by (``repr`` of the JSON value, key, base_dir): a suite's cases
mostly repeat a few ``assert`` values, and a million cases then share a few ``Assertion``
objects instead of each building its own (a fifth of a case's load time and memory).
Farm models are never assigned to after they are built, so sharing them is safe."""
_MAX_PARSED = 1024


def forget_parsed_assertions() -> None:
    """Build assertions afresh from here on: a new load may find a ``script`` file gone."""
    _PARSED.clear()


def parse_assertions(raw: Any, base_dir: str = "", key: str = "assert") -> tuple[list[Assertion], list[Issue]]:
    """Validate an ``assert`` value (one object or a list of objects) into ``Assertion``s."""
    seen = (repr(raw), key, base_dir)  # repr tells JSON values apart (1, 1.0, True, "1")
    shared = _PARSED.get(seen)
    if shared is not None:
        return list(shared), []
    assertions, issues = _parse_assertions(raw, base_dir, key)
    if not issues:
        if len(_PARSED) >= _MAX_PARSED:
            _PARSED.clear()
        _PARSED[seen] = tuple(assertions)
    return assertions, issues


def _parse_assertions(raw: Any, base_dir: str, key: str) -> tuple[list[Assertion], list[Issue]]:
    if isinstance(raw, dict):
        entries = [(key, raw)]
    elif isinstance(raw, list):
        entries = [(f"{key}[{i}]", item) for i, item in enumerate(raw)]
    elif isinstance(raw, str) and raw in YAO_TYPES:
        return [], [(key, _shorthand_issue(raw))]
    else:
        return [], [(key, f"must be an object or a list of objects, got {json_type_name(raw)}")]
    assertions: list[Assertion] = []
    issues: list[Issue] = []
    for where, item in entries:
        assertion, found = parse_assertion(item, where, base_dir)
        issues.extend(found)
        if assertion is not None and not found:
            assertions.append(assertion)
    return assertions, issues


def _shorthand_issue(kind: str) -> str:
    # Yao's valueless shorthand ("assert": "contains") names a type but not what to compare with
    if kind in _NEEDS_VALUE:
        return (f"{kind!r} is Yao's shorthand, a check type without a value: write "
                f'{{"type": "{kind}", "value": ...}} (every type but script needs a value)')
    return f'{kind!r} is Yao\'s shorthand, a check type alone: write {{"type": "{kind}", "script": ...}}'


def parse_assertion(raw: Any, where: str, base_dir: str = "") -> tuple[Assertion | None, list[Issue]]:
    """Validate one assertion object."""
    if not isinstance(raw, dict):
        return None, [(where, f"must be an object, got {json_type_name(raw)}")]
    issues: list[Issue] = [
        (f"{where}.{k}", f"unknown key ({one_of(ASSERTION_KEYS)}){suggest(k, ASSERTION_KEYS)}")
        for k in raw
        if k not in ASSERTION_KEYS
    ]
    kind = raw.get("type", "equals")
    if kind == "":  # Yao's code evaluates an empty type as equals
        kind = "equals"
    if not isinstance(kind, str):
        return None, [*issues, (f"{where}.type", f"must be a string, got {json_type_name(kind)}")]
    if kind not in YAO_TYPES:
        message = f"unknown check {kind!r} ({one_of(YAO_TYPES)}){suggest(kind, YAO_TYPES)}"
        return None, [*issues, (f"{where}.type", message)]
    issues += _common_issues(raw, kind, where)
    issues += _TYPE_VALIDATORS.get(kind, _no_more)(raw, where, base_dir)
    if issues:
        return None, issues
    return _build(raw, kind, where), []


def _common_issues(raw: dict[str, Any], kind: str, where: str) -> list[Issue]:
    issues: list[Issue] = []
    if "negate" in raw and not isinstance(raw["negate"], bool):
        issues.append((f"{where}.negate", f"must be true or false, got {json_type_name(raw['negate'])}"))
    if raw.get("message") is not None and not isinstance(raw["message"], str):
        issues.append((f"{where}.message", f"must be a string, got {json_type_name(raw['message'])}"))
    for k, owner in _KEY_OWNER.items():
        if k in raw and kind != owner:
            issues.append((f"{where}.{k}", f"only used by {owner} checks, not by {kind}"))
    if kind in _NEEDS_VALUE and "value" not in raw:
        issues.append((f"{where}.value", f"missing: {kind} needs a value"))
    return issues


def _build(raw: dict[str, Any], kind: str, where: str) -> Assertion:
    return Assertion(
        type=kind,
        value=raw.get("value"),
        has_value="value" in raw,
        path=raw.get("path"),
        script=raw.get("script"),
        use=raw.get("use"),
        options=raw.get("options"),
        message=raw.get("message"),
        negate=bool(raw.get("negate", False)),
        where=where,
    )


def _no_more(raw: dict[str, Any], where: str, base_dir: str) -> list[Issue]:
    return []


def _check_regex(raw: dict[str, Any], where: str, base_dir: str) -> list[Issue]:
    if "value" not in raw:
        return []
    return _regex_issue(raw["value"], f"{where}.value", must_be_str=True)


def _regex_issue(pattern: Any, where: str, must_be_str: bool) -> list[Issue]:
    if not isinstance(pattern, str):
        return [(where, f"a regex must be a string, got {json_type_name(pattern)}")] if must_be_str else []
    try:
        re.compile(pattern)
    except re.error as exc:
        return [(where, f"invalid regex {pattern!r}: {exc}")]
    return []


def _check_type(raw: dict[str, Any], where: str, base_dir: str) -> list[Issue]:
    value = raw.get("value")
    if "value" not in raw or (isinstance(value, str) and value in JSON_TYPES):
        return []
    shown = value if isinstance(value, str) else json_type_name(value)
    return [(f"{where}.value", f"not a JSON type: {shown!r} ({one_of(JSON_TYPES)}){suggest(shown, JSON_TYPES)}")]


def _check_json_path(raw: dict[str, Any], where: str, base_dir: str) -> list[Issue]:
    if "path" not in raw:
        return [(f"{where}.path", "missing: a json_path check needs a path")]
    path = raw["path"]
    if not isinstance(path, str):
        return [(f"{where}.path", f"must be a string, got {json_type_name(path)}")]
    try:
        compile_path(path)
    except ValueError as exc:
        return [(f"{where}.path", str(exc))]
    return []


def _check_script(raw: dict[str, Any], where: str, base_dir: str) -> list[Issue]:
    ref = raw.get("script")
    if ref is None:
        return [(f"{where}.script", "missing: a script check needs script (module:function or file.py:function)")]
    if not isinstance(ref, str):
        return [(f"{where}.script", f"must be a string, got {json_type_name(ref)}")]
    try:
        resolve_script(ref, base_dir)
    except ValueError as exc:
        return [(f"{where}.script", str(exc))]
    return []


def _check_agent(raw: dict[str, Any], where: str, base_dir: str) -> list[Issue]:
    use = raw.get("use")
    if use is not None and (not isinstance(use, str) or not use.strip()):
        return [(f"{where}.use", "must be a connector id or agents:<agent id>")]
    if raw.get("value", "x") in (None, ""):
        return [(f"{where}.value", "the judge needs a criterion")]
    return _judge_option_issues(raw.get("options"), f"{where}.options")


def _judge_option_issues(options: Any, at: str) -> list[Issue]:
    """Yao's assertion ``options``: ``connector`` (the judge's) and ``metadata`` (sent to an agent judge)."""
    if options is None:
        return []
    if not isinstance(options, dict):
        return [(at, f"must be an object, got {json_type_name(options)}")]
    issues = [(f"{at}.{k}", f"unknown key ({one_of(_JUDGE_OPTION_KEYS)})") for k in options
              if k not in _JUDGE_OPTION_KEYS]
    if "connector" in options and (not isinstance(options["connector"], str) or not options["connector"]):
        issues.append((f"{at}.connector", "must be a connector id (a non-empty string)"))
    if "metadata" in options and not isinstance(options["metadata"], dict):
        issues.append((f"{at}.metadata", f"must be an object, got {json_type_name(options['metadata'])}"))
    return issues


def _check_tool_result(raw: dict[str, Any], where: str, base_dir: str) -> list[Issue]:
    if "value" not in raw:
        return []
    value, at = raw["value"], f"{where}.value"
    if not isinstance(value, dict):
        return [(at, f"must be an object {{tool, result}}, got {json_type_name(value)}")]
    issues = [(f"{at}.{k}", "unknown key (expected tool, result)") for k in value if k not in ("tool", "result")]
    if not isinstance(value.get("tool"), str) or not value["tool"].strip():
        issues.append((f"{at}.tool", "missing: the tool name (a string)"))
    if "result" in value:
        issues += _result_regex_issues(value["result"], f"{at}.result")
    return issues


def _result_regex_issues(value: Any, at: str) -> list[Issue]:
    if isinstance(value, str) and value.startswith("regex:"):
        return _regex_issue(value[len("regex:") :], at, must_be_str=True)
    if isinstance(value, dict):
        return [i for k, v in value.items() for i in _result_regex_issues(v, f"{at}.{k}")]
    if isinstance(value, list):
        return [i for n, v in enumerate(value) for i in _result_regex_issues(v, f"{at}[{n}]")]
    return []


_TYPE_VALIDATORS = {
    "regex": _check_regex,
    "type": _check_type,
    "json_path": _check_json_path,
    "script": _check_script,
    "agent": _check_agent,
    "tool_called": lambda raw, where, base_dir: tool_called_issues(raw, where),
    "tool_result": _check_tool_result,
    **{kind: tool_check_validator(kind) for kind in TRAJECTORY_CHECKS},
}


# ------------------------------------------------------------------------- neuro-san responses


def parse_response(
    raw: Any, where: str, tool_checks: list[Assertion] | None = None
) -> tuple[list[StockTest], list[Issue]]:
    """Validate an interaction's ``response`` block into ``StockTest``s (empty block: no tests);
    its trajectory checks (``trajectory = {tools = [...], match = in_order}``, SPEC 21) go to
    ``tool_checks`` as assertions on the run's tool calls."""
    if raw is None:
        return [], []
    if not isinstance(raw, dict):
        return [], [(where, f"must be an object, got {json_type_name(raw)}")]
    tests: list[StockTest] = []
    issues: list[Issue] = []
    for key, block in raw.items():
        at = f"{where}.{key}"
        if key in TRAJECTORY_CHECKS:
            found = tool_check_issues(key, block, at)
            issues += found
            if not found and tool_checks is not None:
                tool_checks.append(Assertion(type=key, value=block, has_value=True, where=at))
        elif key not in RESPONSE_KEYS:
            known = (*RESPONSE_KEYS, *TRAJECTORY_CHECKS)
            issues.append((at, f"unknown key ({one_of(known)}){suggest(key, known)}"))
        elif not isinstance(block, dict):
            issues.append((at, f"not a test block: expected an object of tests, got {json_type_name(block)}"))
        elif not block:
            issues.append((at, "empty test block: it would test nothing"))
        elif key == "text":
            _text_tests(block, at, tests, issues)
        else:
            _data_tests(key, block, [], at, tests, issues)
    return tests, issues


def _text_tests(block: dict[str, Any], where: str, tests: list[StockTest], issues: list[Issue]) -> None:
    for name, given in block.items():
        at = f"{where}.{name}"
        test = name.lower()
        if test not in STOCK_TESTS:
            issues.append((at, f"unknown stock test {name!r} ({one_of(STOCK_TESTS)}){suggest(name, STOCK_TESTS)}"))
        elif isinstance(given, dict):
            issues.append((at, "the text is a string: give a value or a list of values, not an object"))
        else:
            _add_test("text", [], test, given, at, tests, issues)


def _data_tests(
    target: str, block: dict[str, Any], key: list[str], where: str, tests: list[StockTest], issues: list[Issue]
) -> None:
    # neuro-san's rule: an object under a key always goes one level deeper into the data.
    for name, given in block.items():
        at = f"{where}.{name}"
        if isinstance(given, dict):
            parts = name.split(".")
            if not given:
                issues.append((at, "empty test block: it would test nothing"))
            elif not all(parts):
                issues.append((at, "empty key segment in a dotted key"))
            else:
                _data_tests(target, given, key + parts, at, tests, issues)
        elif name.lower() in STOCK_TESTS:
            _add_test(target, key, name.lower(), given, at, tests, issues)
        else:
            issues.append((at, _not_a_block(name, key)))


def _not_a_block(name: str, key: list[str]) -> str:
    message = f"not a test block: {name!r} is not a stock test and its value is not an object of tests"
    if key and key[-1].lower() in STOCK_TESTS:
        message += f" (to compare with a whole object, wrap it in a list: {key[-1]} = [{{...}}])"
    return message + suggest(name, STOCK_TESTS)


def _add_test(
    target: str, key: list[str], test: str, given: Any, where: str, tests: list[StockTest], issues: list[Issue]
) -> None:
    values = given if isinstance(given, list) else [given]
    if not values:
        issues.append((where, "empty list of values: it would test nothing"))
        return
    if test in _ORDERED_TESTS:
        bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int | float | str)]
        if bad:
            issues.append((where, f"{test} compares numbers or strings, got {json_type_name(bad[0])}"))
            return
    tests.append(StockTest(target=target, key=key, test=test, values=values, where=where))  # type: ignore[arg-type]
