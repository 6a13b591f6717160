"""The JSONL loader's fast paths give what the slow ones gave: each line parsed as ``json.loads``
parses it, each case equal to the one pydantic validates from the same values (``PerCaseModel.checked``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from farm.models import Case, Message, PerCaseModel, Turn
from farm.models.base import Assertion
from farm.suites import load_input
from farm.suites.jsonl import _decode_line


def reference_decode(raw: bytes, first: bool) -> tuple[Any, str]:
    """The loader's line reading before its fast path: ``json.loads`` on the stripped text."""
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
    except ValueError as exc:
        return None, f"not valid JSON: {exc}"
    if not isinstance(obj, dict):
        return None, "not an object"
    return obj, ""


LINES = [
    b'{"id": "a", "input": "x"}\n', b'{"id": "a", "input": "x"}\r\n', b'{"id": "a", "input": "x"} \t\n',
    b'{"id": "a", "input": "x"}\x0b\n', b'{"id": "a", "input": "x"}\x1c\n', b'{"id": "a"}\xc2\xa0\n',
    b'\xef\xbb\xbf{"id": "bom"}\n', b'{"a": 1, "a": 2, "b": 3}\n', b'{"a": 1,}\n', b'{"a": [1,]}\n',
    b'{"a": NaN, "b": Infinity, "c": -Infinity}\n', b'{"a": -NaN}\n', b'{"a": 01}\n', b'{"a": .5}\n',
    b'{"a": "\\ud800"}\n', b'{"a": "\\udfff\\ud800"}\n', b'{"a": "\\ud83d\\ude00"}\n', b'{"a": "\xff"}\n',
    b'{"a": "\xed\xa0\x80"}\n', b'{"a": "tab\there"}\n', b'{"a": "nul\\u0000"}\n', b'{"a": 1e400, "b": -1e-400}\n',
    b'{"a": 1.7976931348623157e308, "b": 5e-324, "c": 0.1, "d": 2.2250738585072011e-308}\n',
    b'{"a": ' + b"9" * 4300 + b"}\n", b'{"a": ' + b"9" * 4301 + b"}\n", b'{"a": -0, "b": -0.0, "c": 1.0, "d": 1E2}\n',
    b'{"a": ' + b"[" * 300 + b"]" * 300 + b"}\n", b'{"a": ' + b"[" * 3000 + b"]" * 3000 + b"}\n",
    b'{"a": 1} {"b": 2}\n', b'{"a": 1}//c\n', b'{"a": /*c*/ 1}\n', b'{"\xc3\xa9t\xc3\xa9": "\xe2\x82\xac"}\n',
    b'{"a": "\\/\\b\\f\\n\\r\\t\\"\\\\"}\n', b'{"a": "\\x41"}\n', b'{"a": tru}\n', b'{"a": true, "b": null}\x00\n',
    b'{}\n', b'{ }\n', b'{"": {"": []}}\n',
]


@pytest.mark.parametrize("raw", LINES)
@pytest.mark.parametrize("first", [True, False])
def test_each_line_is_read_as_json_loads_reads_it(raw: bytes, first: bool) -> None:
    obj, problem = _decode_line(raw, first)
    expected, expected_problem = reference_decode(raw, first)
    assert (repr(obj), bool(problem)) == (repr(expected), bool(expected_problem))
    if expected_problem != "not an object":
        assert problem == expected_problem


def test_random_values_parse_alike() -> None:
    """Numbers and strings of every kind, as a suite writer's tool may write them."""
    import random

    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(chr(rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0xD7FF), rng.randint(0xE000, 0x10FFFF)]))
                       for _ in range(rng.randint(0, 12)))
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 22))).lstrip("0") or "0"
        number = f"{'-' if rng.random() < 0.3 else ''}{digits[:3] or '0'}.{digits}e{rng.randint(-330, 310)}"
        for ascii_only in (True, False):
            line = (f'{{"id": {json.dumps(text, ensure_ascii=ascii_only)}, "n": {number}, "i": {digits}, '
                    f'{json.dumps(text, ensure_ascii=ascii_only)}: [{number}]}}\n').encode()
            assert repr(_decode_line(line, False)) == repr(reference_decode(line, False))


def validated(model: PerCaseModel) -> PerCaseModel:
    """The same model as pydantic validates it from the fields it was given."""
    return type(model)(**{name: getattr(model, name) for name in model.model_fields_set})


CASES = [
    {"id": "plain", "input": "hello", "assert": {"type": "contains", "value": "h"}},
    {"id": "expected", "input": "hi", "expected": {"k": [1, 2.5, None]}},
    {"id": "zero", "input": "hi", "expected": 0},
    {"id": "false", "input": "hi", "expected": False},
    {"id": "fields", "input": "x", "user": "u", "team": "t", "metadata": {"m": {"n": 1}}, "skip": True,
     "timeout": "2m30s", "name": "N", "options": {"connector": "c", "search": True, "skip": {"trace": True}},
     "assert": [{"type": "regex", "value": "x", "negate": True}, {"type": "equals", "value": None}]},
    {"id": "int-timeout", "input": "x", "timeout": 30},
    {"id": "message", "input": {"role": "user", "content": "m", "name": "n"}},
    {"id": "parts", "input": [{"type": "text", "text": "t"}, {"type": "image_url", "image_url": {"url": "u"}}]},
    {"id": "history", "input": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]},
    {"id": "dynamic", "input": "hello", "max_turns": 3, "simulator": {"fixed_responses": ["a", "b"]},
     "checkpoints": [{"id": "c1", "assert": {"type": "contains", "value": "x"}}]},
]


def test_every_case_equals_the_one_pydantic_validates(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in CASES))
    cases = load_input(str(path)).cases
    assert [c.id for c in cases] == [c["id"] for c in CASES]
    for case in cases:
        for model in (case, *case.turns, *(m for t in case.turns for m in t.messages)):
            again = validated(model)
            assert model == again
            assert model.model_fields_set == again.model_fields_set
            assert model.model_dump_json() == again.model_dump_json()
            assert list(model.__dict__) == list(again.__dict__)
            assert (model.__pydantic_extra__, model.__pydantic_private__) == \
                   (again.__pydantic_extra__, again.__pydantic_private__)
        assert Case.model_validate_json(case.model_dump_json()) == case


def test_checked_fills_defaults_and_factories_and_refuses_unknown_fields() -> None:
    turn = Turn.checked(messages=[Message.checked(role="user", content="x")])
    assert turn == Turn(messages=[Message(role="user", content="x")])
    other = Turn.checked(messages=[])
    assert turn.assertions == other.assertions == [] and turn.assertions is not other.assertions
    assert turn.model_fields_set == {"messages"}
    with pytest.raises(TypeError, match="unknown"):
        Turn.checked(messages=[], assertion=[])
    with pytest.raises(TypeError, match="missing"):
        Turn.checked(assertions=[])
    assert Assertion.checked(type="contains", value="x") == Assertion(type="contains", value="x")


def test_a_planned_case_and_its_index_line_as_built_before() -> None:
    from farm.agents.ref import AgentRef
    from farm.plan.sweep_plan import CaseSlot, PlannedCase
    from farm.run.execute import RunEnvironment
    from farm.stats import plan_case

    case = Case(id="c 1", format="yao", turns=[Turn(messages=[Message(content="x")])], timeout_s=2.5)
    plan, agent = plan_case(case, 3, 0.5), AgentRef("python", "m:f")
    checked, validated = PlannedCase.checked(case=case, plan=plan, agent=agent), PlannedCase(case=case, plan=plan,
                                                                                                 agent=agent)
    assert checked == validated and checked.model_dump_json() == validated.model_dump_json()
    for env in (RunEnvironment(), RunEnvironment(timeout_s=7)):
        for planned in (checked, PlannedCase.checked(case=case.model_copy(update={"timeout_s": None}), plan=plan,
                                                     agent=agent)):
            assert CaseSlot.line_of(planned, env) == CaseSlot.of(planned, env).encode()
