"""Yao JSONL suites: one case per line (SPEC 4.1).

Blank lines and ``//`` comment lines are skipped but counted, so every problem is reported
at the line an editor shows. Every bad line is reported, not only the first.

Besides the design's fields, a line may have what Yao's ``agent/eval`` reads: ``options``
(passed to the agent), ``before``/``after`` hooks (Python callables, ``farm.suites.hooks``), the
dynamic fields (``farm.suites.dynamic``), attachments in content parts
(``farm.suites.attachments``), and the smaller shapes Yao accepts: a message's ``content`` as
one part object, ``refusal`` on a history message, and the ``name`` Yao's own tests write.
Any other key is refused: a typo would test nothing.

``--collect-only`` read by several processes (``iter_listed``) leaves the commonest case unbuilt
(``farm.suites.file_cases.PlainCase``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from io import BufferedReader
from pathlib import Path
from typing import Any, cast

from pydantic_core import from_json

from farm.checks.extract import json_type_name
from farm.checks.spec import Issue, parse_assertions, suggest
from farm.durations import parse_duration
from farm.errors import Problem
from farm.models import Assertion, Case, Message, Turn
from farm.suites.attachments import convert_part
from farm.suites.dynamic import DYNAMIC_KEYS, LoadOptions, parse_dynamic
from farm.suites.file_cases import FileCases, PlainCase, listed_turn, plain_case
from farm.suites.hooks import check_hook
from farm.suites.lines import SKIP_BLOCK, numbered

__all__ = ["YAO_KEYS", "input_messages", "iter_jsonl", "iter_listed", "load_jsonl"]

YAO_KEYS = (
    "id", "name", "input", "expected", "assert", "user", "team", "metadata", "options", "skip", "timeout",
    "before", "after", *DYNAMIC_KEYS,
)  # fmt: skip
"""Every top-level key a Yao case may have."""
_KNOWN_KEYS = frozenset(YAO_KEYS)
_DYNAMIC_KEYS = frozenset(DYNAMIC_KEYS)
"""A case with none of these is a standard case (``parse_dynamic`` finds nothing to say)."""

ROLES = ("system", "developer", "user", "assistant", "tool")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id", "refusal")
OPTION_TYPES: dict[str, type] = {
    "connector": str, "mode": str, "search": bool, "disable_global_prompts": bool, "metadata": dict, "skip": dict,
}
"""Yao's per-case ``options`` and the JSON type of each."""
SKIP_OPTIONS = ("history", "trace", "output", "keyword", "search")
_FIELD_KEYS = frozenset(("user", "team", "metadata", "skip", "timeout", "name", "options", "before", "after"))
"""The keys ``_optional_fields`` and ``_yao_fields`` check (with ``expected``, which needs no check)."""


def load_jsonl(path: Path, suite: str, options: LoadOptions | None = None) -> tuple[list[Case], list[Problem]]:
    """Read a JSONL suite; returns the good cases and a problem for every bad line."""
    problems: list[Problem] = []
    cases = list(iter_jsonl(path, suite, options, problems))
    return cases, problems


def iter_jsonl(path: Path, suite: str, options: LoadOptions | None, problems: list[Problem], *,
               batches: tuple[int, Callable[[int], bool | None]] | None = None,
               broken_id: Callable[[str, int], object] | None = None) -> Iterator[Case]:
    """Each good case of a JSONL suite as its line is read; a problem for every bad line is
    appended to ``problems`` (a file that cannot be read: one problem with no line).

    The file is read line by line (a million-case suite is never held as text), and each case
    is built once, with its location: nothing per case is kept. ``batches``: ``(size, keep)``,
    read only the batches of ``size`` lines ``keep(batch number from 0)`` accepts (a process
    loading part of a suite skips the others unparsed), and stop at the first it answers None.
    ``broken_id(id, line)``: told the id of each case that has problems, so that a duplicate of
    it is reported with them, not after they are fixed.
    """
    options = options or LoadOptions()
    file = FileCases(str(path), suite, str(path.parent.resolve()))
    try:
        for lineno, obj in _case_objects(path, problems, batches):
            case = _parsed(obj, options, lineno, file, problems, broken_id)
            if case is not None:
                yield case
    except OSError as exc:
        problems.append(_unreadable(file.source, exc))


def iter_listed(path: Path, suite: str, options: LoadOptions, problems: list[Problem], *,
                batches: tuple[int, Callable[[int], bool | None]] | None = None,
                broken_id: Callable[[str, int], object] | None = None) -> Iterator[Case | PlainCase]:
    """``iter_jsonl`` of a listing (``LoadOptions.listing``): each plain case (``plain_case``) as
    a ``PlainCase``, never built; every other case, every problem and every broken case's id
    (``broken_id``) as ``iter_jsonl`` gives them."""
    file = FileCases(str(path), suite, str(path.parent.resolve()))
    try:
        for lineno, obj in _case_objects(path, problems, batches):
            plain = plain_case(obj, lineno, file)
            if plain is not None:
                yield plain
                continue
            case = _parsed(obj, options, lineno, file, problems, broken_id)
            if case is not None:
                yield case
    except OSError as exc:
        problems.append(_unreadable(file.source, exc))


def _case_objects(path: Path, problems: list[Problem], batches: tuple[int, Callable[[int], bool | None]] | None
                  ) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each line's object with its number; a problem for each line that is not one. Raises
    OSError: the file cannot be read (the reader's ``_unreadable``, as when a case's own reading fails)."""
    source = str(path)
    with cast(BufferedReader, path.open("rb", buffering=SKIP_BLOCK)) as stream:
        for lineno, raw in numbered(stream, batches):
            obj, problem = _decode_line(raw, lineno == 1)
            surrogate = "" if _SURROGATE_ESCAPE.search(raw) is None else lone_surrogate(raw, obj)
            if surrogate:
                problem = (f"holds {surrogate}, a lone UTF-16 surrogate escape: not text (no report or worker "
                           "could carry it); write the character itself or a surrogate pair")
            if problem:
                problems.append(Problem(source, lineno, "", problem))
            elif obj is not None:
                yield lineno, obj


def _unreadable(source: str, exc: OSError) -> Problem:
    return Problem(source, None, "", f"cannot read: {exc.strerror or exc}")


def _parsed(obj: dict[str, Any], options: LoadOptions, lineno: int, file: FileCases, problems: list[Problem],
            broken_id: Callable[[str, int], object] | None) -> Case | None:
    """The case of line ``lineno``, or None with its problems appended (and its id told to ``broken_id``)."""
    case, issues = parse_case(obj, options, lineno, file)
    if case is not None:
        return case
    problems += [Problem(file.source, lineno, key, message) for key, message in issues]
    if broken_id is not None and isinstance(obj.get("id"), str):
        broken_id(obj["id"], lineno)
    return None


def _decode_line(raw: bytes, first: bool) -> tuple[Any, str]:
    """``(object, "")``, ``(None, "")`` for a skipped line, or ``(None, problem)``."""
    if raw[:1] == b"{":
        # Most lines: an object, parsed by pydantic-core's parser (a fifth of ``json.loads``'s
        # time). It accepts no line ``json.loads`` refuses and reads every other one as it
        # does (tests/suites/test_suites_jsonl.py compares them); whatever it refuses (a BOM, a lone
        # surrogate, nesting past its limit, any error) is read as before, for the same result.
        try:
            obj = from_json(raw)
        except ValueError:
            pass
        else:
            if isinstance(obj, dict):
                return obj, ""
    try:
        text = raw.decode("utf-8-sig" if first else "utf-8").strip()
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start + 1})"
    if not text or text.startswith("//"):
        return None, ""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} (column {exc.colno})"
    except RecursionError:
        return None, "not valid JSON: nested too deeply"
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        return None, f"not valid JSON: {exc}"
    if not isinstance(obj, dict):
        return None, f"a case must be a JSON object, got {json_type_name(obj)}"
    return obj, ""


def lone_surrogate(raw: bytes, value: Any) -> str:
    """The first lone surrogate (``\\ud800``) in a line's decoded JSON value, as its escape; "" if
    none. ``json.loads`` accepts one; UTF-8 (every report, the queue) cannot encode it. Only a line
    holding a surrogate's escape is encoded again to find out."""
    if _SURROGATE_ESCAPE.search(raw) is None:
        return ""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"\\u{ord(exc.object[exc.start]):04x}"
    return ""


def parse_case(obj: dict[str, Any], options: LoadOptions, line: int, file: FileCases
               ) -> tuple[Case | None, list[Issue]]:
    """Validate one Yao case object, of line ``line`` of ``file``."""
    base_dir = file.base_dir
    issues: list[Issue] = [] if obj.keys() <= _KNOWN_KEYS else [
        (str(k), f"unknown key (expected one of: {', '.join(YAO_KEYS)}){suggest(k, YAO_KEYS)}")
        for k in obj
        if k not in YAO_KEYS
    ]
    case_id = obj.get("id")
    if "id" not in obj:
        issues.append(("id", "missing: every case needs an id"))
    elif not isinstance(case_id, str) or not case_id.strip():
        issues.append(("id", f"must be a non-empty string, got {json_type_name(case_id)}"))
    dynamic = None if _DYNAMIC_KEYS.isdisjoint(obj) else parse_dynamic(obj, base_dir, options, issues)
    messages: list[Message] = []
    if "input" not in obj:
        issues.append(("input", "missing: every case needs an input"))
    elif not ((dynamic is not None and obj["input"] == [])  # [] lets the simulator open
              or (options.listing and isinstance(obj["input"], str))):  # a listed string: no message, no issue
        messages, found = input_messages(obj["input"], base_dir=base_dir)
        issues += found
    assertions = [] if dynamic is not None else _assertions(obj, base_dir, issues)
    if _FIELD_KEYS.isdisjoint(obj):  # a plain case (most of a large suite's): its only field is expected
        fields = {"expected": obj.get("expected")}
    else:
        fields = _optional_fields(obj, issues) | _yao_fields(obj, base_dir, issues)
    if issues:
        return None, issues
    # Every value is checked above (its type, as pydantic would hold it): built without
    # validating it again (``PerCaseModel.checked``), only the fields a case sets.
    given: dict[str, Any] = {k: v for k, v in fields.items() if v is not None and v is not False}
    if dynamic is not None:
        given["dynamic"] = dynamic
    turn = listed_turn(assertions) if options.listing else Turn.checked(messages=messages, assertions=assertions)
    shape = tuple(given)
    first = file.first.get(shape)
    if first is not None:  # what ``Case.checked`` would build, copied from the first (every value its own)
        return first.copied({"id": case_id, "turns": [turn], "input": obj["input"], "line": line, **given}), []
    case = file.first[shape] = Case.checked(id=case_id, format="yao", base_dir=base_dir, turns=[turn],
                                            input=obj["input"], **given, source=file.source, line=line,
                                            suite=file.suite)
    return case, []


def _assertions(obj: dict[str, Any], base_dir: str, issues: list[Issue]) -> list[Assertion]:
    # ``assert`` wins whenever the key is present, even as [] (SPEC 4.2).
    if "assert" in obj:
        assertions, found = parse_assertions(obj["assert"], base_dir)
        issues += found
        return assertions
    if "expected" in obj:
        return [Assertion(type="equals", value=obj["expected"], has_value=True, where="expected")]
    return []


def _optional_fields(obj: dict[str, Any], issues: list[Issue]) -> dict[str, Any]:
    fields: dict[str, Any] = {"expected": obj.get("expected")}
    for key in ("user", "team"):
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            issues.append((key, f"must be a string, got {json_type_name(value)}"))
        fields[key] = value
    metadata = obj.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        issues.append(("metadata", f"must be an object, got {json_type_name(metadata)}"))
    fields["metadata"] = metadata
    skip = obj.get("skip", False)
    if not isinstance(skip, bool):
        issues.append(("skip", f"must be true or false, got {json_type_name(skip)}"))
    fields["skip"] = skip is True
    fields["timeout_s"] = None
    if obj.get("timeout") is not None:
        try:
            fields["timeout_s"] = parse_duration(obj["timeout"])
        except ValueError as exc:
            issues.append(("timeout", str(exc)))
    return fields


def _yao_fields(obj: dict[str, Any], base_dir: str, issues: list[Issue]) -> dict[str, Any]:
    """``name``, ``options`` and the ``before``/``after`` hooks (Yao's ``agent/eval``)."""
    name = obj.get("name")
    if name is not None and not isinstance(name, str):
        issues.append(("name", f"must be a string, got {json_type_name(name)}"))
    for key in ("before", "after"):
        problem = check_hook(obj[key], base_dir) if key in obj else ""
        if problem:
            issues.append((key, problem))
    return {"name": name, "options": _case_options(obj.get("options"), issues),
            "before": obj.get("before"), "after": obj.get("after")}


def _case_options(raw: Any, issues: list[Issue]) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        issues.append(("options", f"must be an object, got {json_type_name(raw)}"))
        return None
    for key, value in raw.items():
        wanted = OPTION_TYPES.get(key)
        if wanted is None:
            issues.append((f"options.{key}", f"unknown option (expected one of: {', '.join(OPTION_TYPES)})"
                                             f"{suggest(key, OPTION_TYPES)}"))
        elif not isinstance(value, wanted) or (wanted is str and not value):
            issues.append((f"options.{key}", f"must be {_type_word(wanted)}, got {json_type_name(value)}"))
        elif key == "skip":
            issues += _skip_issues(raw["skip"])
    return raw


def _skip_issues(skip: dict[str, Any]) -> list[Issue]:
    unknown = f"unknown skip option (expected one of: {', '.join(SKIP_OPTIONS)})"
    return [(f"options.skip.{k}", unknown if k not in SKIP_OPTIONS else "must be true or false")
            for k, v in skip.items() if k not in SKIP_OPTIONS or not isinstance(v, bool)]


def _type_word(wanted: type) -> str:
    return {str: "a non-empty string", bool: "true or false", dict: "an object"}.get(wanted, "valid")


def input_messages(value: Any, key: str = "input", base_dir: str = "") -> tuple[list[Message], list[Issue]]:
    """A Yao ``input``: a string, a Message, a ContentPart array or a list of Messages."""
    if isinstance(value, str):
        return [Message.checked(role="user", content=value)], []
    if isinstance(value, dict):
        message, issues = _message(value, key, base_dir)
        return ([message] if message else []), issues
    if not isinstance(value, list):
        return [], [(key, f"must be a string, a Message or a list of Messages, got {json_type_name(value)}")]
    if not value:
        return [], [(key, "an empty list: nothing to send")]
    if all(isinstance(p, dict) and "type" in p and "role" not in p for p in value):
        parts, issues = _parts(value, key, base_dir)
        return ([] if issues else [Message(role="user", content=parts)]), issues
    messages: list[Message] = []
    issues = []
    for n, item in enumerate(value):
        if not isinstance(item, dict):
            issues.append((f"{key}[{n}]", f"must be a Message object, got {json_type_name(item)}"))
            continue
        message, found = _message(item, f"{key}[{n}]", base_dir)
        issues += found
        if message:
            messages.append(message)
    return messages, issues


def _message(raw: dict[str, Any], key: str, base_dir: str) -> tuple[Message | None, list[Issue]]:
    issues: list[Issue] = [
        (f"{key}.{k}", f"unknown key (expected one of: {', '.join(_MESSAGE_KEYS)}){suggest(k, _MESSAGE_KEYS)}")
        for k in raw
        if k not in _MESSAGE_KEYS
    ]
    role = raw.get("role", "user")
    if role not in ROLES:
        issues.append((f"{key}.role", f"unknown role {role!r} (expected one of: {', '.join(ROLES)})"))
    if "refusal" in raw and not isinstance(raw["refusal"], str):
        issues.append((f"{key}.refusal", f"must be a string, got {json_type_name(raw['refusal'])}"))
    content = raw.get("content")
    if isinstance(content, dict):  # one part object stands for a one-part array (Yao accepts it)
        content = [content]
    if isinstance(content, list):
        content, found = _parts(content, f"{key}.content", base_dir)
        issues += found
    elif content is None and not raw.get("tool_calls") and "refusal" not in raw:
        issues.append((f"{key}.content", "missing: a message needs content"))
    elif content is not None and not isinstance(content, str):
        issues.append((f"{key}.content", f"must be a string or a ContentPart array, got {json_type_name(content)}"))
    if issues:
        return None, issues
    return Message.model_validate({**raw, "content": content}), []


def _parts(parts: list[Any], key: str, base_dir: str) -> tuple[list[dict[str, Any]], list[Issue]]:
    """Validate content parts and convert attachments to what is sent."""
    converted: list[dict[str, Any]] = []
    issues: list[Issue] = []
    for n, part in enumerate(parts):
        at = f"{key}[{n}]"
        found = _part_issues(part, at)
        if not found:
            part, found = convert_part(part, at, base_dir)
        issues += found
        converted.append(part)
    return converted, issues


def _part_issues(part: Any, key: str) -> list[Issue]:
    if not isinstance(part, dict):
        return [(key, f"a ContentPart must be an object, got {json_type_name(part)}")]
    kind = part.get("type")
    if not isinstance(kind, str) or not kind:
        return [(f"{key}.type", "missing: a ContentPart needs a type")]
    if kind == "text" and not isinstance(part.get("text"), str):
        return [(f"{key}.text", "missing: a text part needs text (a string)")]
    return []
