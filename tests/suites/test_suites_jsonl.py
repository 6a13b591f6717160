"""Yao JSONL suites on real files (SPEC 4.1, 4.2 load-time errors)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from farm.errors import SuiteError
from farm.models import Message
from farm.suites import load_input


def write(tmp_path: Path, *lines: Any, name: str = "inputs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_input(str(path))
    return [str(p) for p in info.value.problems]


def test_the_seed_examples_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"id": "T001", "input": "Simple text input"},
        {"id": "T002", "input": {"role": "user", "content": "Message with role"}},
        {"id": "T003", "input": {"role": "user", "content": [{"type": "text", "text": "ContentPart array"}]}},
        {"id": "T004", "input": [{"role": "user", "content": "First"}, {"role": "assistant", "content": "R"},
                                 {"role": "user", "content": "Follow-up"}]},
        {"id": "T005", "input": "Text input", "expected": {"keywords": ["keyword1", "keyword2"]}},
        {"id": "T006", "input": "Test with specific user", "user": "admin", "team": "ops-team"},
        {"id": "T007", "input": [{"type": "text", "text": "bare"}, {"type": "image_url", "image_url": {"url": "x"}}]},
    )  # fmt: skip
    loaded = load_input(str(path))
    assert loaded.kind == "file"
    assert loaded.root == tmp_path
    assert loaded.files == [path]
    cases = {c.id: c for c in loaded.cases}
    assert list(cases) == [f"T00{i}" for i in range(1, 8)]
    assert cases["T001"].turns[0].messages == [Message(role="user", content="Simple text input")]
    assert cases["T003"].turns[0].messages[0].text() == "ContentPart array"
    assert [m.role for m in cases["T004"].turns[0].messages] == ["user", "assistant", "user"]
    assert cases["T007"].turns[0].messages[0].role == "user"  # a bare ContentPart array is one user message
    assert len(cases["T007"].turns[0].messages[0].content) == 2  # type: ignore[arg-type]
    [equals] = cases["T005"].turns[0].assertions
    assert (equals.type, equals.value, equals.has_value) == ("equals", {"keywords": ["keyword1", "keyword2"]}, True)
    assert (cases["T006"].user, cases["T006"].team) == ("admin", "ops-team")
    first = cases["T001"]
    assert (first.format, first.source, first.line, first.suite) == ("yao", str(path), 1, "inputs")
    assert first.base_dir == str(tmp_path.resolve())
    assert first.input == "Simple text input"


def test_optional_fields(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"id": "a", "input": "x", "metadata": {"k": 1}, "skip": True, "timeout": "2m30s", "expected": 5,
         "assert": []},
        {"id": "b", "input": "x", "timeout": "30s", "assert": {"type": "contains", "value": "x"}, "expected": "y"},
    )  # fmt: skip
    a, b = load_input(str(path)).cases
    assert (a.metadata, a.skip, a.timeout_s, a.expected) == ({"k": 1}, True, 150.0, 5)
    assert a.turns[0].assertions == []  # assert wins over expected even when it is []
    assert [x.type for x in b.turns[0].assertions] == ["contains"]
    assert b.expected == "y"


def test_blank_and_comment_lines_are_counted(tmp_path: Path) -> None:
    path = write(tmp_path, "// header comment", "", {"id": "a", "input": "x"}, "   ", "  // indented", {"id": "b"})
    assert problems(path) == [f"{path}:6: input: missing: every case needs an input"]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "not valid JSON: Expecting property name enclosed in double quotes (column 2)"),
        ("[1, 2]", "a case must be a JSON object, got array"),
        ({"input": "x"}, "id: missing: every case needs an id"),
        ({"id": 5, "input": "x"}, "id: must be a non-empty string, got number"),
        ({"id": "", "input": "x"}, "id: must be a non-empty string, got string"),
        ({"id": "a"}, "input: missing: every case needs an input"),
        ({"id": "a", "input": 5}, "input: must be a string, a Message or a list of Messages, got number"),
        ({"id": "a", "input": []}, "input: an empty list: nothing to send"),
        ({"id": "a", "input": ["x"]}, "input[0]: must be a Message object, got string"),
        ({"id": "a", "input": {"role": "robot", "content": "x"}}, "input.role: unknown role 'robot' (expected one of: "
                                                                  "system, developer, user, assistant, tool)"),
        ({"id": "a", "input": {"role": "user"}}, "input.content: missing: a message needs content"),
        ({"id": "a", "input": {"content": "x", "colour": 1}}, "input.colour: unknown key (expected one of: role, "
                                                              "content, name, tool_calls, tool_call_id, refusal)"),
        ({"id": "a", "input": [{"type": "text"}]}, "input[0].text: missing: a text part needs text (a string)"),
        ({"id": "a", "input": "x", "timout": "3s"}, "timout: unknown key (expected one of: id, name, input, "
                                                    "expected, assert, user, team, metadata, options, skip, timeout, "
                                                    "before, after, simulator, checkpoints, max_turns) (did you mean "
                                                    "'timeout'?)"),
        ({"id": "a", "input": "x", "timeout": "soon"}, "timeout: not a duration: 'soon' (expected e.g. 30s, 1m, "
                                                       "2m30s, 1h)"),
        ({"id": "a", "input": "x", "skip": "yes"}, "skip: must be true or false, got string"),
        ({"id": "a", "input": "x", "user": 1}, "user: must be a string, got number"),
        ({"id": "a", "input": "x", "metadata": [1]}, "metadata: must be an object, got array"),
        ({"id": "a", "input": "x", "assert": "always"}, "assert: must be an object or a list of objects, got "
                                                          "string"),
        ({"id": "a", "input": "x", "assert": [{"type": "contains", "value": "x"}, "y"]}, "assert[1]: must be an "
                                                                                        "object, got string"),
        ({"id": "a", "input": "x", "assert": {"type": "regex", "value": 3}}, "assert.value: a regex must be a string, "
                                                                             "got number"),
        ({"id": "a", "input": "x", "assert": {"type": "equals"}}, "assert.value: missing: equals needs a "
                                                                  "value"),
    ],
)  # fmt: skip
def test_every_error_names_file_line_and_key(tmp_path: Path, line: Any, problem: str) -> None:
    path = write(tmp_path, {"id": "ok", "input": "fine"}, line)
    assert f"{path}:2: {problem}" in problems(path)


def test_script_that_cannot_be_imported(tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text("def good(o, i, e):\n    return True\n")
    path = write(
        tmp_path,
        {"id": "a", "input": "x", "assert": {"type": "script", "script": "checks:good"}},
        {"id": "b", "input": "x", "assert": {"type": "script", "script": "checks:gone"}},
        {"id": "c", "input": "x", "assert": {"type": "script", "script": "missing.py:f"}},
    )
    assert problems(path) == [
        f"{path}:2: assert.script: 'checks:gone': checks has no attribute 'gone'",
        f"{path}:3: assert.script: file not found: {tmp_path.resolve() / 'missing.py'}",
    ]


def test_every_bad_line_is_reported_together_with_duplicates(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"id": "T1", "input": "x"},
        {"id": "T2", "input": "x", "assert": {"type": "contians", "value": 1}, "skip": 1},
        {"id": "T1", "input": "again"},
        "oops",
        {"id": "T3", "input": "x", "timeout": "1m5"},
    )
    found = problems(path)
    assert [p.split(": ")[0] for p in found] == [f"{path}:2", f"{path}:2", f"{path}:4", f"{path}:5", f"{path}:3"]
    assert found[-1] == f"{path}:3: id: duplicate id 'T1' (first at {path}:1)"


def test_non_utf8_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"id": "a", "input": "x"}\n{"id": "\xff"}\n')
    assert problems(path) == [f"{path}:2: not UTF-8 text (byte 9)"]


def test_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "win.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "input": "x"}\r\n{"id": "b", "input": "y"}\r\n')
    assert [c.id for c in load_input(str(path)).cases] == ["a", "b"]


def test_empty_file_has_no_cases(tmp_path: Path) -> None:
    path = write(tmp_path, "// nothing yet")
    assert load_input(str(path)).cases == []


def test_a_large_suite_loads_lean_and_as_before(tmp_path: Path) -> None:
    """Loading a big suite (issue 16): each case is built once with its location, the plans and
    fields sets of equal cases are shared, and nothing of that shows in the cases."""
    import gc

    from farm.api import TestSettings, prepare_sweep

    cases = [{"id": f"C{i}", "input": f"say {i}", "assert": {"type": "contains", "value": "x"}} for i in range(50)]
    path = write(tmp_path, *cases[:25], "// a comment", "", *cases[25:])
    loaded = load_input(str(path))
    assert [(c.id, c.line, c.source, c.suite) for c in loaded.cases[24:26]] == [
        ("C24", 25, str(path), "inputs"), ("C25", 28, str(path), "inputs")]
    first, second = loaded.cases[0], loaded.cases[1]
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__  # shared
    assert "skip_reason" not in first.model_fields_set
    changed = first.model_copy(update={"skip_reason": "later"})
    assert "skip_reason" in changed.model_fields_set and "skip_reason" not in second.model_fields_set
    assert first.turns[0].assertions[0] == second.turns[0].assertions[0]
    assert first.model_dump() | {"id": "C1", "line": 2, "input": "say 1", "turns": None} == \
        second.model_dump() | {"turns": None}

    settings = TestSettings(input=str(path), name="py:os:getcwd", runs=3, min_pass_rate=0.7, cwd=str(tmp_path))
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            plan = prepare_sweep(settings).plan
            assert gc.isenabled() is enabled  # loading pauses the collector, then puts it back as it was
        finally:
            gc.enable()
        assert plan.total_runs == 150 and {(c.plan.runs, c.plan.required) for c in plan.cases} == {(3, 3)}
        assert plan.cases[0].plan is plan.cases[49].plan


def test_cases_with_the_same_assert_share_its_assertions_and_a_new_load_builds_them_again(tmp_path: Path) -> None:
    """A million cases repeating one ``assert`` build it once (farm.checks.spec's cache); the next
    load builds afresh (its files may have changed), and values of different JSON types stay apart."""
    path = write(tmp_path, *({"id": f"C{i}", "input": f"ping {i}", "assert": [{"type": "contains", "value": "pong"},
                                                                               {"type": "regex", "value": "p.ng"}]}
                             for i in range(3)),
                 {"id": "C3", "input": "ping", "assert": {"type": "equals", "value": 1}},
                 {"id": "C4", "input": "ping", "assert": {"type": "equals", "value": True}},
                 {"id": "C5", "input": "ping", "assert": {"type": "equals", "value": 1.0}})
    cases = load_input(str(path)).cases
    first = cases[0].turns[0].assertions
    assert all(c.turns[0].assertions[0] is first[0] and c.turns[0].assertions[1] is first[1] for c in cases[:3])
    assert [repr(c.turns[0].assertions[0].value) for c in cases[3:]] == ["1", "True", "1.0"]
    again = load_input(str(path)).cases[0].turns[0].assertions
    assert again == first and again[0] is not first[0]
