"""JSON values: comparison, text forms, extraction from agent text, JSONPath, bounded reprs.

Every check compares values the way JSON does (SPEC 4.2): numbers by value (5 == 5.0),
booleans are not numbers (True != 1), "5" != 5, object key order is irrelevant, array
order matters.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from farm.models import JsonValue

if TYPE_CHECKING:  # jsonpath-ng loads at the first JSONPath, not with every sweep (issue 32)
    from jsonpath_ng import JSONPath

__all__ = [
    "JSON_TYPES",
    "MISSING",
    "bound_actual",
    "compile_path",
    "extract_data",
    "find_path",
    "is_number",
    "json_equal",
    "json_type_matches",
    "json_type_name",
    "parse_json_text",
    "safe_repr",
    "to_text",
]

JSON_TYPES = ("string", "number", "integer", "boolean", "array", "object", "null")
"""The values the ``type`` check accepts."""

MAX_REPR = 240
"""Characters of a value shown in a check message."""
MAX_ACTUAL = 4000
"""Characters of JSON kept as a check outcome's ``actual``."""

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:\n[ \t]*```|```)", re.DOTALL)


class _Missing:
    """Marks "no value here" (distinct from JSON null)."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


def is_number(value: Any) -> bool:
    """True for JSON numbers: int or float, never bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Compare two values as JSON values (see the module docstring)."""
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
        return False
    return bool(a == b)


def to_text(value: Any) -> str:
    """A value as text: strings as they are, None as '', the rest as compact sorted JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def parse_json_text(text: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``text`` is one JSON value, else ``(False, None)``."""
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def extract_data(text: str) -> Any:
    """The data in an agent's text answer.

    The first fenced ```json / ```yaml block (```yml too; an untagged fence when its body is
    JSON), else the whole text parsed as JSON, else the text itself.
    """
    for match in _FENCE.finditer(text):
        lang, body = match.group(1).lower(), match.group(2)
        if lang == "json":
            ok, value = parse_json_text(body)
            if ok:
                return value
        elif lang in ("yaml", "yml"):
            ok, value = _parse_yaml(body)
            if ok:
                return value
        elif not lang:
            ok, value = parse_json_text(body)
            if ok:
                return value
    ok, value = parse_json_text(text.strip())
    return value if ok else text


def _parse_yaml(body: str) -> tuple[bool, Any]:
    import yaml  # only answers in YAML fences need it: about 15 ms off every start

    try:
        return True, _jsonable(yaml.safe_load(body))
    except (yaml.YAMLError, ValueError, RecursionError):
        return False, None


def _jsonable(value: Any) -> Any:
    # YAML has dates, sets and non-string keys; outcomes cross the queue as JSON.
    if isinstance(value, dict):
        return {k if isinstance(k, str) else to_text(_jsonable(k)): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


@lru_cache(maxsize=512)
def compile_path(path: str) -> JSONPath:
    """Parse a JSONPath (``$.a.b[0]`` or ``a.b[0]``); raises ValueError with the reason."""
    if not isinstance(path, str) or not path.strip():
        raise ValueError("empty JSONPath")
    from jsonpath_ng.ext.parser import parse as parse_jsonpath  # 1.16 stopped re-exporting it

    try:
        return parse_jsonpath(path)
    except Exception as exc:  # jsonpath-ng raises several unrelated types for bad input
        raise ValueError(f"invalid JSONPath {path!r}: {exc}") from None


def find_path(data: Any, path: str) -> Any:
    """The value at ``path``: one match → that value, several → the list, none → ``MISSING``."""
    matches = [m.value for m in compile_path(path).find(data)]
    if not matches:
        return MISSING
    return matches[0] if len(matches) == 1 else matches


def json_type_name(value: Any) -> str:
    """The JSON type of a value: ``string``, ``number``, ``boolean``, ``array``, ``object``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def json_type_matches(value: Any, wanted: str) -> bool:
    """``integer``: an int, or a float with an integral value (5.0: JSON has one number type)."""
    if wanted == "integer":
        if isinstance(value, bool) or not is_number(value):
            return False
        return isinstance(value, int) or (math.isfinite(value) and float(value).is_integer())
    return json_type_name(value) == wanted


def safe_repr(value: Any, limit: int = MAX_REPR) -> str:
    """A short repr for messages: JSON-ish, truncated in the middle of long values."""
    try:
        text = repr(value) if isinstance(value, str) else to_text(value) or "null"
    except Exception:  # a value that cannot even be printed must not break a message
        text = f"<{type(value).__name__}>"
    if len(text) <= limit:
        return text
    keep = max(limit - 20, 10)
    head, tail = text[: keep * 2 // 3], text[-(keep // 3) :]
    return f"{head}…[{len(text) - len(head) - len(tail)} chars]…{tail}"


def bound_actual(value: Any, limit: int = MAX_ACTUAL) -> JsonValue:
    """``value`` itself when small; a truncated string form when its JSON exceeds ``limit``."""
    if value is MISSING:
        return None
    # Its JSON fits whatever it holds (null, false: 5 chars; a character escapes to at most 6): not written
    if value is None or isinstance(value, bool):
        if limit >= 5:
            return value
    elif isinstance(value, str) and 6 * len(value) + 2 <= limit:
        return value
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return safe_repr(value, limit)
    if len(text) <= limit:
        return value
    source = value if isinstance(value, str) else text
    return source[:limit] + f"…[truncated {len(source) - limit} chars]"
