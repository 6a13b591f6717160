"""neuro-san HOCON suites on real files (SPEC 4.1, 4.2)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from farm.errors import SuiteError
from farm.suites import load_input

MUSIC_NERD = """
# This file defines everything necessary for a data-driven test.
{
    # Describes what agent to test against.
    "agent": "music_nerd",
    "success_ratio": "2/3",
    "metadata": { "user_id": "tester" },
    "timeout_in_seconds": 90,
    "interactions": [
        {
            # This is what we send as input to streaming_chat()
            "text": "Who did Yellow Submarine?",
            "response": {
                "text": {
                    "keywords": ["Beatles"]
                }
            }
        },
        {
            "text": "Where were they from?",
            "sly_data": { "x": 847, "y": 23 },
            "timeout_in_seconds": 30,
            "chat_filter": "maximal",
            "continue_conversation": false,
            "response": {
                "structure": {
                    "answer": { "keywords": "Liverpool" },
                    "running_cost": { "value": 3.0 }
                },
                "sly_data": { "equals": { "value": [19481.0] } }
            }
        },
        { "text": "And now?", "response": {} }
    ]
}
"""


def write(tmp_path: Path, text: str, name: str = "case.hocon") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def problems(path: Path | str) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_input(str(path))
    return [str(p) for p in info.value.problems]


def test_the_reference_example_loads(tmp_path: Path) -> None:
    path = write(tmp_path, MUSIC_NERD, "beatles.hocon")
    [case] = load_input(str(path)).cases
    assert (case.id, case.format, case.suite, case.source) == ("beatles", "neuro-san", "beatles", str(path))
    assert (case.agent, case.connection, case.metadata, case.test_timeout_s) == (
        "music_nerd",
        None,
        {"user_id": "tester"},
        90,
    )
    assert (case.success_ratio.k, case.success_ratio.n) == (2, 3)  # type: ignore[union-attr]
    first, second, third = case.turns
    assert first.messages[0].content == "Who did Yellow Submarine?"
    assert [(t.target, t.test, t.values) for t in first.stock_tests] == [("text", "keywords", ["Beatles"])]
    assert (second.sly_data, second.timeout_s, second.chat_filter) == ({"x": 847, "y": 23}, 30, "MAXIMAL")
    assert second.continue_conversation is False and first.continue_conversation is True
    assert [(t.target, t.key, t.test) for t in second.stock_tests] == [
        ("structure", ["answer"], "keywords"),
        ("structure", ["running_cost"], "value"),
        ("sly_data", ["equals"], "value"),
    ]
    assert third.stock_tests == []
    assert case.input == ["Who did Yellow Submarine?", "Where were they from?", "And now?"]


@pytest.mark.parametrize(
    ("connections", "ids", "kinds"),
    [
        ('["direct", "http", "https"]', ["c@direct", "c@http", "c@https"], ["direct", "http", "https"]),
        ("[http]", ["c@http"], ["http"]),
        ('"https"', ["c"], ["https"]),
        (None, ["c"], [None]),
    ],
)
def test_connections(tmp_path: Path, connections: str | None, ids: list[str], kinds: list[str | None]) -> None:
    line = f"connections = {connections}\n" if connections else ""
    path = write(tmp_path, line + 'interactions = [{ text = "hi" }]\n', "c.hocon")
    cases = load_input(str(path)).cases
    assert [c.id for c in cases] == ids
    assert [c.connection for c in cases] == kinds


def test_hocon_features(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_TEST_QUESTION", "from the environment")
    monkeypatch.delenv("FARM_TEST_UNSET", raising=False)
    write(tmp_path, '_shared { band = Beatles, ratio = "1/2" }\n', "common.inc")
    path = write(
        tmp_path,
        """
        include "common.inc"
        // slash comments and # hash comments
        agent = music_nerd            # an unquoted string
        success_ratio = ${_shared.ratio}
        metadata.question = ${?FARM_TEST_QUESTION}
        metadata.optional = ${?FARM_TEST_UNSET}
        interactions = [
          {
            text = ${metadata.question}
            response.structure.answer.band.value = ${_shared.band}
            response.sly_data { "a.b" { keywords = x } }
          }
        ]
        """,
        "features.hocon",
    )
    [case] = load_input(str(path)).cases
    assert case.agent == "music_nerd"
    assert (case.success_ratio.k, case.success_ratio.n) == (1, 2)  # type: ignore[union-attr]
    assert case.metadata == {"question": "from the environment"}  # an unset ${?ENV} leaves the key out
    turn = case.turns[0]
    assert turn.messages[0].content == "from the environment"
    assert [(t.target, t.key, t.test, t.values) for t in turn.stock_tests] == [
        ("structure", ["answer", "band"], "value", ["Beatles"]),
        ("sly_data", ["a", "b"], "keywords", ["x"]),  # a quoted dotted key is a path too
    ]


def test_syntax_error_names_the_parser_line(tmp_path: Path) -> None:
    path = write(tmp_path, 'agent = x\ninteractions = [\n  { text = "hi" }\n\n')
    assert problems(path) == [f"{path}:5: HOCON syntax error (column 1): Expected ']'"]


def test_long_parser_messages_are_shortened(tmp_path: Path) -> None:
    path = write(tmp_path, "agent = x\njust_a_word\n")
    [problem] = problems(path)
    assert problem == f"{path}:3: HOCON syntax error (column 1): unexpected end of text"


def test_substitution_error_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "agent = x\n\ninteractions = [{ text = ${nowhere} }]\n")
    [problem] = problems(path)
    assert problem.startswith(f"{path}:3: HOCON error: Cannot resolve variable ${{nowhere}}")


def test_top_level_must_be_an_object(tmp_path: Path) -> None:
    path = write(tmp_path, "[1, 2]\n")
    assert problems(path) == [f"{path}: a test case must be an object, got array"]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('agent = x', "interactions: missing: a test case needs at least one interaction"),
        ('interactions = []', "interactions: must be a non-empty list of objects, got an empty list"),
        ('interactions = "hi"', "interactions: must be a non-empty list of objects, got string"),
        ('interactions = ["hi"]', "interactions[0]: an interaction must be an object, got string"),
        ('sucess_ratio = "1/2"\ninteractions = [{text = hi}]', "sucess_ratio: unknown key (expected one of: agent, "
         "connections, success_ratio, use_direct, metadata, timeout_in_seconds, interactions) (did you mean "
         "'success_ratio'?)"),
        ('success_ratio = "3/2"\ninteractions = [{text = hi}]', "success_ratio: needs 0 <= k <= n and n >= 1, got 3/2"),
        ('success_ratio = "1/0"\ninteractions = [{text = hi}]', "success_ratio: needs 0 <= k <= n and n >= 1, got 1/0"),
        ('success_ratio = "1.5/2"\ninteractions = [{text = hi}]', "success_ratio: must be \"k/n\" with integers k and "
         "n, got '1.5/2'"),
        ('success_ratio = "-1/2"\ninteractions = [{text = hi}]', "success_ratio: must be \"k/n\" with integers k and "
         "n, got '-1/2'"),
        ('success_ratio = 1\ninteractions = [{text = hi}]', "success_ratio: must be \"k/n\" with integers k and n, "
         "got 1"),
        ('connections = [direct, ftp]\ninteractions = [{text = hi}]', "connections[1]: unknown connection 'ftp' "
         "(expected one of: direct, http, https, mcp, grpc, service)"),
        ('connections = [http, http]\ninteractions = [{text = hi}]', "connections[1]: 'http' is listed twice"),
        ('connections = []\ninteractions = [{text = hi}]', "connections: an empty list: nothing to connect with"),
        ('use_direct = maybe\ninteractions = [{text = hi}]', "use_direct: must be true or false, got string"),
        ('metadata = [1]\ninteractions = [{text = hi}]', "metadata: must be an object, got array"),
        ('timeout_in_seconds = -3\ninteractions = [{text = hi}]', "timeout_in_seconds: duration must be positive "
         "and finite, got -3"),
        ('interactions = [{text = hi, txet = 1}]', "interactions[0].txet: unknown key (expected one of: text, "
         "sly_data, timeout_in_seconds, chat_filter, continue_conversation, response) (did you mean 'text'?)"),
        ('interactions = [{text = [a]}]', "interactions[0].text: must be a string, got array"),
        ('interactions = [{text = hi, sly_data = 3}]', "interactions[0].sly_data: must be an object, got number"),
        ('interactions = [{text = hi, chat_filter = FULL}]', "interactions[0].chat_filter: must be MINIMAL or "
         "MAXIMAL, got 'FULL'"),
        ('interactions = [{text = hi, continue_conversation = 0}]', "interactions[0].continue_conversation: must be "
         "true or false, got number"),
        ('interactions = [{text = hi, response { text = Beatles }}]', "interactions[0].response.text: not a test "
         "block: expected an object of tests, got string"),
        ('interactions = [{text = hi, response { text {} }}]', "interactions[0].response.text: empty test block: it "
         "would test nothing"),
        ('interactions = [{text = hi, response { structure { answer {} } }}]', "interactions[0].response.structure."
         "answer: empty test block: it would test nothing"),
        ('interactions = [{text = hi, response { text { kewords = x } }}]', "interactions[0].response.text.kewords: "
         "unknown stock test 'kewords' (expected one of: value, not_value, less, not_less, greater, not_greater, "
         "keywords, not_keywords, gist, not_gist) (did you mean 'keywords'?)"),
        ('interactions = [{text = hi, response { sly_data { total = 3 } }}]', "interactions[0].response.sly_data."
         "total: not a test block: 'total' is not a stock test and its value is not an object of tests"),
    ],
)  # fmt: skip
def test_semantic_errors_name_the_key_path(tmp_path: Path, body: str, problem: str) -> None:
    path = write(tmp_path, body + "\n")
    assert f"{path}: {problem}" in problems(path)


def test_every_problem_is_reported_together(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        success_ratio = "5/4"
        colour = blue
        interactions = [
          { text = hi, response { text { keywords = [] } } }
          { text = hi, chat_filter = all }
          { text = hi, response { structure { x {} } } }
        ]
        """,
    )
    assert [p.split(": ")[1] for p in problems(path)] == [
        "colour",
        "success_ratio",
        "interactions[0].response.text.keywords",
        "interactions[1].chat_filter",
        "interactions[2].response.structure.x",
    ]


def test_chat_filter_wire_form_and_case(tmp_path: Path) -> None:
    path = write(tmp_path, "interactions = [{text = a, chat_filter { chat_filter_type = minimal }}, {text = b}]\n")
    [case] = load_input(str(path)).cases
    assert [t.chat_filter for t in case.turns] == ["MINIMAL", None]
    assert case.input == ["a", "b"]


def test_interaction_without_text_sends_no_message(tmp_path: Path) -> None:
    path = write(tmp_path, "interactions = [{ sly_data { x = 1 } }]\n")
    [case] = load_input(str(path)).cases
    assert case.turns[0].messages == [] and case.turns[0].sly_data == {"x": 1}


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.hocon"
    path.write_bytes(b'agent = "\xff"\n')
    assert problems(path) == [f"{path}: not UTF-8 text (byte 10)"]
