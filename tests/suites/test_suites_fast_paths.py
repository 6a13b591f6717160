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
    from farm.run.environment import RunEnvironment
    from farm.stats import plan_case

    case = Case(id="c 1", format="yao", turns=[Turn(messages=[Message(content="x")])], timeout_s=2.5)
    plan, agent = plan_case(case, 3, 0.5), AgentRef("python", "m:f")
    checked, validated = PlannedCase.checked(case=case, plan=plan, agent=agent), PlannedCase(case=case, plan=plan,
                                                                                                 agent=agent)
    assert checked == validated and checked.model_dump_json() == validated.model_dump_json()
    for env in (RunEnvironment(), RunEnvironment(timeout_s=7)):
        for planned in (checked, PlannedCase.checked(case=case.model_copy(update={"timeout_s": None}), plan=plan,
                                                     agent=agent)):
            assert CaseSlot.line(planned.case, planned.plan, env) == CaseSlot.of(planned, env).encode()


# ------------------------------------------------------------- a listing (--collect-only)

LISTED_GOOD = [
    *CASES,
    {"id": "skip", "input": "x", "skip": True, "assert": {"type": "contains", "value": "h"}},
    {"id": "timeout", "input": "x", "timeout": "5s", "assert": {"type": "contains", "value": "h"}},
    {"id": "judged", "input": "x", "assert": [{"type": "agent", "value": "is kind", "use": "agents:critic"},
                                               {"type": "agent", "value": "is short"}]},
    {"id": "judged-again", "input": "y", "assert": [{"type": "agent", "value": "is kind", "use": "agents:critic"},
                                                     {"type": "agent", "value": "is short"}]},
    {"id": "message-list", "input": [{"role": "user", "content": [{"type": "text", "text": "t"}]}], "expected": 1},
    {"id": "dynamic-empty", "input": [], "simulator": {"fixed_responses": ["a"]},
     "checkpoints": [{"id": "c", "assert": {"type": "contains", "value": "a"}}]},
]
LISTED_BAD: list[Any] = [
    "{not json", "[1, 2]", {"input": "x"}, {"id": 5, "input": "x"}, {"id": " ", "input": "x"}, {"id": "a"},
    {"id": "b", "input": 5}, {"id": "c", "input": []}, {"id": "d", "input": ["x"]},
    {"id": "e", "input": {"role": "robot", "content": "x"}}, {"id": "f", "input": {"role": "user"}},
    {"id": "g", "input": [{"type": "text"}]}, {"id": "h", "input": "x", "timout": "3s"},
    {"id": "i", "input": "x", "timeout": "soon"}, {"id": "j", "input": "x", "skip": "yes"},
    {"id": "k", "input": "x", "assert": "contains"}, {"id": "l", "input": "x", "assert": {"type": "regex", "value": 3}},
    {"id": "m", "input": 5, "assert": {"type": "nope"}}, {"id": "plain", "input": "a duplicate id"},
    {"id": "n", "input": "x", "max_turns": 3},
]


def read_suite(path: Path, listing: bool) -> tuple[list[Case], list[str]]:
    from farm.errors import SuiteError
    from farm.suites import open_input
    from farm.suites.dynamic import LoadOptions

    stream = open_input(str(path), options=LoadOptions(listing=listing))
    cases = list(stream)
    try:
        stream.check()
    except SuiteError as exc:
        return cases, [str(p) for p in exc.problems]
    return cases, []


def without_messages(case: Case) -> dict[str, Any]:
    return case.model_dump(exclude={"turns": {"__all__": {"messages"}}})


@pytest.mark.parametrize("bad", [False, True])
def test_a_listed_suite_reads_as_the_whole_one_but_for_its_messages(tmp_path: Path, bad: bool) -> None:
    """``LoadOptions.listing`` checks every line as the full read does: the same cases (no
    messages in their turns) and the same problems, in the same order."""
    lines = [*LISTED_GOOD, *LISTED_BAD] if bad else LISTED_GOOD
    path = tmp_path / "s.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    full, full_problems = read_suite(path, listing=False)
    listed, listed_problems = read_suite(path, listing=True)
    assert listed_problems == full_problems and bool(full_problems) == bad
    assert [c.id for c in listed] == [c.id for c in full]
    for whole, light in zip(full, listed, strict=True):
        assert without_messages(light) == without_messages(whole)
        assert light.model_fields_set == whole.model_fields_set
        assert all(t.messages == [] for t in light.turns)


def test_a_listed_suite_plans_as_the_whole_one(tmp_path: Path) -> None:
    """The planner gives a listing what it gives the full cases: ids (skips marked), counts,
    totals, judges (with the first case asking), agents and the first refusal."""
    from farm.agents.options import AgentOptions
    from farm.plan.batch import BatchPlanner, PlanSpec
    from farm.run.environment import RunEnvironment

    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in LISTED_GOOD * 2))  # the duplicates are dropped
    options = AgentOptions.from_env(tmp_path)
    for spec in (PlanSpec(agent_name="py:tests/agents/distributed.py:by_run", runs=2), PlanSpec()):
        plans = [BatchPlanner(spec, keeper=None, env=RunEnvironment(timeout_s=7), options=options).plan(
            read_suite(path, listing)[0]) for listing in (False, True)]
        whole, listed = ({"ids": p.ids, "selection": p.selection, "totals": p.totals, "agents": p.agents,
                          "judges": {use: (c.id, c.line) for use, c in p.judges.items()},
                          "refused": str(p.refused)} for p in plans)
        assert listed == whole
        assert whole["judges"] == {"agents:critic": ("judged", 13), None: ("judged", 13)}


def test_cases_copied_from_the_first_of_their_shape_equal_the_validated_ones(tmp_path: Path) -> None:
    """Each case after the first with the same optional fields is copied from it
    (``PerCaseModel.copied``): every value its own, the same fields set, as pydantic builds it."""
    again = [{**case, "id": f"{case['id']}-{n}"} for n in (2, 3) for case in CASES]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in [*CASES, *again]))
    cases = load_input(str(path)).cases
    assert len(cases) == len(CASES) * 3
    for case in cases:
        again_validated = validated(case)
        assert case == again_validated and case.model_fields_set == again_validated.model_fields_set
        assert list(case.__dict__) == list(again_validated.__dict__)
        assert case.model_dump_json() == again_validated.model_dump_json()
    first, copy = cases[0], cases[len(CASES)]
    assert (copy.id, copy.line) == ("plain-2", len(CASES) + 1) and copy.turns is not first.turns


def test_copied_takes_only_the_fields_the_model_was_given() -> None:
    turn = Turn.checked(messages=[], assertions=[])
    case = Case.checked(id="a", format="yao", turns=[turn])
    assert case.copied({"id": "b"}) == Case(id="b", format="yao", turns=[turn])
    with pytest.raises(TypeError, match="not among"):
        case.copied({"id": "b", "skip": True})
    with pytest.raises(TypeError, match="not among"):
        Turn.checked(messages=[]).copied({"messages": []})  # its assertions' list would be shared


@pytest.mark.parametrize("seed", range(4))
def test_a_reader_skips_other_batches_as_reading_every_line_would(tmp_path: Path, seed: int) -> None:
    """``iter_jsonl(batches=...)`` counts the newlines of the batches it skips: the lines it reads
    and their numbers are those of reading every line and keeping the batches wanted."""
    import io
    import random

    from farm.suites.lines import numbered as _numbered

    rng = random.Random(seed)
    for _ in range(300):
        lines = [b"x" * rng.choice([0, 1, 3, 9000]) + rng.choice([b"\n", b"\r\n"]) for _ in range(rng.randint(0, 40))]
        data = b"".join(lines)[:-1] if lines and rng.random() < 0.3 else b"".join(lines)
        size, stop = rng.randint(1, 6), rng.randint(0, 12)
        wanted = [rng.random() < 0.5 for _ in range(12)]

        def keep(batch: int, stop: int = stop, wanted: list[bool] = wanted) -> bool | None:
            return None if batch >= stop else wanted[batch]

        stream = io.BufferedReader(io.BytesIO(data), buffer_size=rng.choice([16, 1024, 1 << 16]))
        expected = []
        for number, raw in enumerate(io.BytesIO(data), start=1):
            if keep((number - 1) // size) is None:
                break
            if keep((number - 1) // size):
                expected.append((number, raw))
        assert list(_numbered(stream, (size, keep))) == expected


def test_a_listing_plans_each_case_as_the_general_planner_does(tmp_path: Path) -> None:
    """A listing with no matrix or ramp plans each case with ``_list_case``; the general
    ``_plan_case`` gives the same ids, totals, agents and judges."""
    from farm.agents.options import AgentOptions
    from farm.errors import InputError
    from farm.plan.batch import BatchPlan, BatchPlanner, PlanSpec
    from farm.run.environment import RunEnvironment

    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in LISTED_GOOD))
    cases = read_suite(path, listing=True)[0]
    options = AgentOptions.from_env(tmp_path)
    for spec in (PlanSpec(agent_name="py:tests/agents/distributed.py:by_run", runs=2), PlanSpec()):
        planner = BatchPlanner(spec, keeper=None, env=RunEnvironment(timeout_s=7), options=options)
        listed = planner.plan(cases)
        general = BatchPlan(selection=listed.selection, judges=listed.judges)
        general_planner = BatchPlanner(spec, keeper=None, env=RunEnvironment(timeout_s=7), options=options)
        try:
            for case in cases:
                general_planner._plan_case(case, general)
        except InputError as exc:  # the planner keeps its first refusal
            general.refused = exc
        assert (listed.ids, listed.totals, listed.agents, str(listed.refused)) == \
               (general.ids, general.totals, general.agents, str(general.refused))
        assert any("(skipped: skip: true)" in i for i in listed.ids) if spec.runs else listed.refused is not None


PLAIN = [  # the shape a listing leaves unbuilt (``PlainCase``): an id, a string input, at most ``assert``
    {"id": "p1", "input": "x"},
    {"id": "p2", "input": "", "assert": {"type": "contains", "value": "h"}},  # the checks of "plain": one turn
    {"id": " p3 ", "input": "y", "assert": [{"type": "agent", "value": "is kind", "use": "agents:critic"}]},
    {"id": "p4", "input": "z", "assert": {"type": "equals", "value": 1}},
    {"id": "p5", "input": "z", "assert": {"type": "equals", "value": 1.0}},  # repr tells 1, 1.0 and true apart
    {"id": "p6", "input": "z", "assert": {"type": "equals", "value": True}},
    {"id": "p7", "input": "é\u2028", "assert": []},
    {"assert": {"type": "contains", "value": "h"}, "input": "w", "id": "p8"},
]


@pytest.mark.parametrize("bad_at", [None, "start", "middle", "end"])
def test_a_listing_leaves_plain_cases_unbuilt_and_builds_them_as_parse_case(tmp_path: Path, bad_at: str | None
                                                                            ) -> None:
    """``iter_listed`` gives what ``iter_jsonl`` gives a listing, line by line, but each plain
    case after its file's first as a ``PlainCase``, whose ``case()`` is the case ``parse_case``
    builds (equal, the same fields set and field order); the same problems, in order."""
    from farm.errors import Problem
    from farm.suites.dynamic import LoadOptions
    from farm.suites.file_cases import PlainCase
    from farm.suites.jsonl import iter_jsonl, iter_listed

    good: list[Any] = [*PLAIN[:2], *LISTED_GOOD, *PLAIN, *PLAIN[1:4]]
    good += [{**c, "id": f"{c['id']}-again"} for c in PLAIN]
    at = {None: None, "start": 0, "middle": len(good) // 2, "end": len(good)}[bad_at]
    lines = good if at is None else [*good[:at], *LISTED_BAD, *good[at:]]
    path = tmp_path / "s.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    options = LoadOptions(listing=True)
    built_problems: list[Problem] = []
    listed_problems: list[Problem] = []
    built = list(iter_jsonl(path, "s", options, built_problems))
    listed = list(iter_listed(path, "s", options, listed_problems))
    assert [str(p) for p in listed_problems] == [str(p) for p in built_problems]
    assert bool(built_problems) == (at is not None)
    plain = [c for c in listed if isinstance(c, PlainCase)]
    shaped = sum(set(c) <= {"id", "input", "assert"} and isinstance(c["input"], str) for c in good)
    shaped += at is not None  # LISTED_BAD's one good line of that shape: a duplicate id (a problem of the stream)
    assert len(plain) == shaped - 1  # all but the first
    assert len(listed) == len(built)
    for entry, case in zip(listed, built, strict=True):
        again = entry.case() if isinstance(entry, PlainCase) else entry
        assert again == case and again.model_fields_set == case.model_fields_set
        assert list(again.__dict__) == list(case.__dict__) and again.model_dump_json() == case.model_dump_json()
        assert (entry.id, entry.line, entry.skip, entry.skip_reason) == \
               (case.id, case.line, case.skip, case.skip_reason)


def test_a_listing_plans_its_unbuilt_cases_as_the_built_ones(tmp_path: Path) -> None:
    """``BatchPlanner.plan_listed`` of a batch with ``PlainCase`` entries gives what ``plan`` gives the
    same cases built: ids (skips marked), selection counts, totals, agents, judges (the first case
    asking, built) and the first refusal, under -k, --run, --runs and without an agent."""
    from farm.agents.options import AgentOptions
    from farm.plan.batch import BatchPlanner, PlanSpec
    from farm.run.environment import RunEnvironment
    from farm.suites.dynamic import LoadOptions
    from farm.suites.file_cases import PlainCase
    from farm.suites.jsonl import iter_listed

    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [*PLAIN, *LISTED_GOOD, *PLAIN[::-1]]), encoding="utf-8")
    entries = list(iter_listed(path, "s", LoadOptions(listing=True), []))
    built = [c.case() if isinstance(c, PlainCase) else c for c in entries]
    options = AgentOptions.from_env(tmp_path)
    agent = "py:tests/agents/distributed.py:by_run"
    for spec in (PlanSpec(agent_name=agent, runs=2), PlanSpec(agent_name=agent, patterns=("p", "ju*")),
                 PlanSpec(agent_name=agent, run_pattern="^p[2-5]$"), PlanSpec(agent_name=agent, patterns=("p3",)),
                 PlanSpec()):
        plans = [BatchPlanner(spec, keeper=None, env=RunEnvironment(timeout_s=7), options=options).plan(built),
                 BatchPlanner(spec, keeper=None, env=RunEnvironment(timeout_s=7), options=options).plan_listed(entries)]
        whole, listed = ({"ids": p.ids, "selection": p.selection, "totals": p.totals, "agents": p.agents,
                          "judges": {use: (c.id, c.line, type(c).__name__) for use, c in p.judges.items()},
                          "refused": str(p.refused)} for p in plans)
        assert listed == whole, spec
    assert whole["refused"] != "None"  # no agent: refused, as the built cases are
