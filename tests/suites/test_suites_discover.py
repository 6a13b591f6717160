"""What ``-i`` names: a file, a directory, or a literal message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.errors import InputError, SuiteError
from farm.models import Message
from farm.suites import find_suite_files, load_input, load_message, looks_like_path
from farm.suites.dynamic import LoadOptions


def case_line(case_id: str) -> str:
    return json.dumps({"id": case_id, "input": "hi"}) + "\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "suites"
    (root / "math" / "deep").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "inputs.jsonl").write_text(case_line("T1") + case_line("T2"))
    (root / "output-20241217100000.jsonl").write_text("not a suite\n")
    (root / ".secret.jsonl").write_text("not a suite either\n")
    (root / ".hidden" / "x.jsonl").write_text("ignored\n")
    (root / "math" / "basic.hocon").write_text("interactions = [{ text = add }]\n")
    (root / "math" / "deep" / "more.conf").write_text("connections = [direct, http]\ninteractions = [{ text = x }]\n")
    (root / "math" / "notes.txt").write_text("not a suite\n")
    return root


def test_directory_loads_every_suite_sorted(tree: Path) -> None:
    loaded = load_input(str(tree))
    assert loaded.kind == "dir"
    assert loaded.root == tree
    assert [f.relative_to(tree).as_posix() for f in loaded.files] == [
        "inputs.jsonl",
        "math/basic.hocon",
        "math/deep/more.conf",
    ]
    assert [(c.id, c.suite) for c in loaded.cases] == [
        ("T1", "inputs"),
        ("T2", "inputs"),
        ("math/basic", "math/basic"),
        ("math/deep/more@direct", "math/deep/more"),
        ("math/deep/more@http", "math/deep/more"),
    ]
    assert loaded.cases[2].base_dir == str((tree / "math").resolve())


def test_single_file_ids_and_suites_use_the_stem(tree: Path) -> None:
    loaded = load_input(str(tree / "math" / "basic.hocon"))
    assert (loaded.kind, loaded.root) == ("file", tree / "math")
    assert [(c.id, c.suite) for c in loaded.cases] == [("basic", "basic")]


def test_relative_paths_use_cwd(tree: Path) -> None:
    loaded = load_input("math/basic.hocon", cwd=tree)
    assert loaded.files == [tree / "math" / "basic.hocon"]
    assert loaded.cases[0].source == str(tree / "math" / "basic.hocon")


def test_problems_of_all_files_and_duplicates_across_files(tree: Path) -> None:
    (tree / "math" / "dup.jsonl").write_text(case_line("T2") + '{"id": "T9"}\n')
    (tree / "math" / "broken.hocon").write_text("interactions = [{ text = hi, response { text {} } }]\n")
    with pytest.raises(SuiteError) as info:
        load_input(str(tree))
    assert [str(p) for p in info.value.problems] == [
        f"{tree}/math/broken.hocon: interactions[0].response.text: empty test block: it would test nothing",
        f"{tree}/math/dup.jsonl:2: input: missing: every case needs an input",
        f"{tree}/math/dup.jsonl:1: id: duplicate id 'T2' (first at {tree}/inputs.jsonl:2)",
    ]


def test_hocon_case_id_clashing_with_a_jsonl_id(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(case_line("b"))
    (tmp_path / "b.hocon").write_text("interactions = [{ text = hi }]\n")
    with pytest.raises(SuiteError, match=r"b.hocon: id: duplicate id 'b' \(first at .*a.jsonl:1\)"):
        load_input(str(tmp_path))


def test_literal_message(tmp_path: Path) -> None:
    loaded = load_input("Extract keywords from this text", cwd=tmp_path)
    assert (loaded.kind, loaded.root, loaded.files) == ("message", None, [])
    [case] = loaded.cases
    assert (case.id, case.format, case.input) == ("message", "message", "Extract keywords from this text")
    assert case.turns[0].messages == [Message(role="user", content="Extract keywords from this text")]
    assert case.turns[0].assertions == [] and case.base_dir == str(tmp_path.resolve())


@pytest.mark.parametrize("message", ["你好世界", "a" * 5000, "line one\nline two"])
def test_unusual_messages_are_messages(tmp_path: Path, message: str) -> None:
    """A single token naming no file is a mistyped path (SPEC 20) unless --yao-compat; text with spaces is sent."""
    if len(message.split()) == 1:
        with pytest.raises(InputError, match="to send it to the agent as a message, use -m"):
            load_input(message, cwd=tmp_path)
        assert load_input(message, cwd=tmp_path, options=LoadOptions(yao_compat=True)).cases[0].input == message
    else:
        assert load_input(message, cwd=tmp_path).cases[0].input == message


@pytest.mark.parametrize("arg", ["what is in /etc/passwd?", "./smoke", "~/suites", "cases.json", "Suite.JSONL"])
def test_what_looks_like_a_path_is_one_and_m_sends_it_anyway(tmp_path: Path, arg: str) -> None:
    """SPEC 10: a separator, a suite or .json extension, a leading . or ~: a path, never a message."""
    assert looks_like_path(arg)
    with pytest.raises(InputError, match="no such file or directory"):
        load_input(arg, cwd=tmp_path)
    assert load_message(arg, cwd=tmp_path).cases[0].input == arg  # -m says "message" explicitly


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("missing.jsonl", "missing.jsonl: no such file"),
        ("dir/none.hocon", "dir/none.hocon: no such file"),
        ("x.CONF", "x.CONF: no such file"),
        ("", "empty input: give a suite file (.jsonl, .hocon, .conf), a directory, or -m MESSAGE"),
        ("   ", "empty input"),
    ],
)
def test_input_errors(tmp_path: Path, arg: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        load_input(arg, cwd=tmp_path)
    assert not isinstance(info.value, SuiteError)
    assert str(info.value).startswith(message)


def test_existing_non_suite_file_and_empty_directory(tree: Path) -> None:
    with pytest.raises(InputError, match=r"notes.txt: not a suite file \(expected .jsonl, .hocon or .conf\)"):
        load_input(str(tree / "math" / "notes.txt"))
    (tree / "empty").mkdir()
    with pytest.raises(InputError, match=r"empty: no suite files \(\*.jsonl, \*.hocon, \*.conf\) in this directory"):
        load_input(str(tree / "empty"))


def test_find_suite_files_skips_hidden_and_outputs(tree: Path) -> None:
    names = [p.name for p in find_suite_files(tree)]
    assert names == ["inputs.jsonl", "basic.hocon", "more.conf"]
