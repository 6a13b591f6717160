"""Loading the real formats in full: Yao's dynamic fields, options, hooks, attachments and smaller
shapes; neuro-san's other connections and non-test files. Cases are written here, shaped like the
ones in Yao's and neuro-san's repositories; every refusal names file, line (or key path) and why.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from farm.errors import InputError, SuiteError
from farm.models import Case
from farm.suites import LoadOptions, load_input

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/"
                       "PchI7wAAAABJRU5ErkJggg==")


def write(tmp_path: Path, *lines: Any, name: str = "inputs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def load(path: Path, **options: Any) -> list[Case]:
    return load_input(str(path), options=LoadOptions(**options)).cases


def problems(path: Path, **options: Any) -> list[str]:
    with pytest.raises(SuiteError) as err:
        load(path, **options)
    return [str(p) for p in err.value.problems]


DYNAMIC = {
    "id": "coffee-order", "input": "I want to order coffee",
    "simulator": {"use": "tests.simulator-agent", "options": {
        "metadata": {"persona": "Regular customer", "goal": "Order a medium latte", "style": "terse"},
        "connector": "deepseek.v3"}},
    "checkpoints": [
        {"id": "greeting", "description": "Agent greets", "assert": {"type": "regex", "value": "(?i)(hello|hi)"}},
        {"id": "ask-size", "after": ["greeting"], "assert": {"type": "regex", "value": "(?i)size"}},
        {"id": "upsell", "required": False, "assert": [{"type": "contains", "value": "cake"}]},
    ],
    "max_turns": 10,
}


def test_a_dynamic_case_loads_as_yao_writes_it(tmp_path: Path) -> None:
    [case] = load(write(tmp_path, DYNAMIC))
    assert case.dynamic is not None
    simulator, points = case.dynamic.simulator, case.dynamic.checkpoints
    assert (simulator.use, simulator.connector, simulator.metadata["style"]) == ("tests.simulator-agent",
                                                                                 "deepseek.v3", "terse")
    assert [(p.id, p.after, p.required) for p in points] == [("greeting", [], True), ("ask-size", ["greeting"], True),
                                                            ("upsell", [], False)]
    assert points[0].assertions[0].where == "checkpoints[0].assert" and case.dynamic.max_turns == 10
    assert Case.model_validate_json(case.model_dump_json()) == case  # it crosses Redis as JSON


def test_dynamic_defaults_and_an_empty_input(tmp_path: Path) -> None:
    case = {**DYNAMIC, "input": []}
    del case["max_turns"]
    [loaded] = load(write(tmp_path, case))
    assert loaded.dynamic is not None and loaded.dynamic.max_turns == 20 and loaded.turns[0].messages == []


@pytest.mark.parametrize(("change", "problem"), [
    ({"simulator": "tests.sim"}, "simulator: must be an object, got string"),
    ({"simulator": {"use": "x", "option": {}}}, "simulator.option: unknown key (expected one of: use, options, "
                                                "fixed_responses) (did you mean 'options'?)"),
    ({"simulator": {"options": {"persona": "x"}}}, "simulator.options.persona: unknown key (expected one of: "
                                                   "metadata, connector)"),
    ({"simulator": {}}, "simulator.use: missing: an agent id, llm:<connector>, or give fixed_responses"),
    ({"simulator": {"use": "llm:"}}, "simulator.use: llm: needs a connector id (llm:openai.gpt-4o)"),
    ({"simulator": {"fixed_responses": ["ok", 3]}}, "simulator.fixed_responses[1]: expected a message (non-empty "
                                                    "string) or {message, goal_achieved}"),
    ({"checkpoints": []}, "checkpoints: must be a non-empty list of objects, got array"),
    ({"checkpoints": [{"id": "a", "assert": {"type": "contains", "value": "x"}},
                      {"id": "a", "assert": {"type": "contains", "value": "y"}}]}, "checkpoints[1].id: duplicate "
                                                                                   "checkpoint id 'a'"),
    ({"checkpoints": [{"assert": {"type": "contains", "value": "x"}}]}, "checkpoints[0].id: missing: a checkpoint "
                                                                        "needs an id (a non-empty string)"),
    ({"checkpoints": [{"id": "a", "assert": {"type": "contians", "value": "x"}}]}, "checkpoints[0].assert.type: "
                                                                                   "unknown check 'contians'"),
    ({"checkpoints": [{"id": "a", "assert": "always"}]}, "checkpoints[0].assert: must be an object or a list of "
                                                           "objects, got string"),
    ({"checkpoints": [{"id": "a", "required": "yes", "assert": {"type": "contains", "value": "x"}}]},
     "checkpoints[0].required: must be true or false, got string"),
    ({"max_turns": "10"}, "max_turns: must be an integer, got string"),
])
def test_dynamic_mistakes_are_refused_with_their_key_path(tmp_path: Path, change: dict[str, Any],
                                                          problem: str) -> None:
    path = write(tmp_path, {**DYNAMIC, **change})
    assert any(p.startswith(f"{path}:1: {problem}") for p in problems(path)), problems(path)


def test_max_turns_alone_is_refused_but_compat_ignores_it(tmp_path: Path) -> None:
    path = write(tmp_path, {"id": "a", "input": "x", "max_turns": 3})
    assert problems(path) == [f"{path}:1: max_turns: only used by dynamic cases (with simulator and checkpoints)"]
    assert load(path, yao_compat=True)[0].dynamic is None


def test_simulator_flag_replaces_every_simulator_and_completes_checkpoint_only_cases(tmp_path: Path) -> None:
    scripted = {**DYNAMIC, "id": "scripted", "simulator": {"fixed_responses": ["x"], "options": {
        "metadata": {"goal": "g"}}}}
    bare = {key: value for key, value in DYNAMIC.items() if key != "simulator"} | {"id": "bare"}
    cases = load(write(tmp_path, scripted, bare), simulator="llm:local.sim")
    specs = [c.dynamic.simulator for c in cases if c.dynamic is not None]
    assert [(s.use, s.fixed_responses, s.metadata) for s in specs] == [("llm:local.sim", [], {"goal": "g"}),
                                                                      ("llm:local.sim", [], {})]


def test_options_hooks_and_name_are_read(tmp_path: Path) -> None:
    (tmp_path / "env_test.py").write_text("def Before(ctx, case):\n    return 1\n\ndef After(*args):\n    pass\n")
    case = {"id": "with-options", "name": "Options and hooks", "input": "Quick question",
            "options": {"connector": "deepseek.v3", "mode": "chat", "search": False, "disable_global_prompts": True,
                        "metadata": {"scenario": "filter"}, "skip": {"history": True, "trace": True}},
            "before": "env_test.Before", "after": "env_test:After"}
    [loaded] = load(write(tmp_path, case))
    assert (loaded.name, loaded.before, loaded.after) == ("Options and hooks", "env_test.Before", "env_test:After")
    assert loaded.options == case["options"]


@pytest.mark.parametrize(("change", "problem"), [
    ({"options": {"conector": "x"}}, "options.conector: unknown option (expected one of: connector, mode, search, "
                                     "disable_global_prompts, metadata, skip) (did you mean 'connector'?)"),
    ({"options": {"search": "yes"}}, "options.search: must be true or false, got string"),
    ({"options": {"skip": {"histroy": True}}}, "options.skip.histroy: unknown skip option"),
    ({"options": []}, "options: must be an object, got array"),
    ({"before": "missing_module.Before"}, "before: cannot import module 'missing_module'"),
    ({"after": 5}, "after: must be a non-empty string (module:function or file.py:function)"),
    ({"name": 5}, "name: must be a string, got number"),
])
def test_option_and_hook_mistakes_are_refused(tmp_path: Path, change: dict[str, Any], problem: str) -> None:
    path = write(tmp_path, {"id": "a", "input": "x", **change})
    assert any(p.startswith(f"{path}:1: {problem}") for p in problems(path)), problems(path)


def test_attachments_are_read_relative_to_the_suite_and_sent_as_yao_sends_them(tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "receipt.png").write_bytes(PNG)
    (tmp_path / "fixtures" / "memo.wav").write_bytes(b"RIFF0000WAVE")
    (tmp_path / "fixtures" / "notes.txt").write_text("total: 42")
    content = [{"type": "text", "text": "Analyze these"},
               {"type": "image", "source": "file://fixtures/receipt.png"},
               {"type": "audio", "source": "file://fixtures/memo.wav"},
               {"type": "file", "source": "file://fixtures/notes.txt", "name": "memo.txt"},
               {"type": "image", "url": "https://example.com/r.jpg", "detail": "low"}]
    [case] = load(write(tmp_path, {"id": "receipt", "input": {"role": "user", "content": content}}))
    parts = case.turns[0].messages[0].content
    assert isinstance(parts, list)
    assert parts[1] == {"type": "image_url", "image_url": {
        "url": "data:image/png;base64," + base64.b64encode(PNG).decode(), "detail": "auto"}}
    assert parts[2] == {"type": "input_audio", "input_audio": {"data": base64.b64encode(b"RIFF0000WAVE").decode(),
                                                               "format": "wav"}}
    assert parts[3] == {"type": "file", "file": {"url": "data:text/plain;base64," + base64.b64encode(
        b"total: 42").decode(), "filename": "memo.txt"}}
    assert parts[4] == {"type": "image_url", "image_url": {"url": "https://example.com/r.jpg", "detail": "low"}}


def test_a_missing_attachment_is_a_load_error(tmp_path: Path) -> None:
    content = [{"type": "text", "text": "x"}, {"type": "image", "source": "file://fixtures/gone.jpg"},
               {"type": "file", "source": "fixtures/notes.txt"}]
    path = write(tmp_path, {"id": "a", "input": [{"role": "user", "content": content}]})
    assert problems(path) == [
        f"{path}:1: input[0].content[1].source: file not found: {tmp_path}/fixtures/gone.jpg",
        f"{path}:1: input[0].content[2].source: expected file://<path> (relative to the suite file), got "
        "'fixtures/notes.txt'",
    ]


def test_the_smaller_shapes_yao_accepts(tmp_path: Path) -> None:
    history = [{"role": "user", "content": {"type": "text", "text": "Delete everything"}},
               {"role": "assistant", "refusal": "I cannot do that."},
               {"role": "user", "content": "Then list it"}]
    path = write(tmp_path, {"id": "shapes", "name": "Yao test name", "input": history,
                            "assert": [{"type": "", "value": "x"},
                                       {"type": "agent", "value": "polite", "options": {
                                           "connector": "local.judge", "metadata": {"strict": True}}}]})
    [case] = load(path)
    messages = case.turns[0].messages
    assert messages[0].content == [{"type": "text", "text": "Delete everything"}]
    assert messages[1].model_dump(exclude_none=True) == {"role": "assistant", "refusal": "I cannot do that."}
    assert [a.type for a in case.turns[0].assertions] == ["equals", "agent"]
    assert case.turns[0].assertions[1].options == {"connector": "local.judge", "metadata": {"strict": True}}


@pytest.mark.parametrize(("line", "problem"), [
    ({"id": "a", "input": "x", "assert": "always"}, "assert: must be an object or a list of objects, got string"),
    ({"id": "a", "input": "x", "assert": {"type": "contains", "value": "x", "options": {}}},
     "assert.options: only used by agent checks, not by contains"),
    ({"id": "a", "input": "x", "assert": {"type": "agent", "value": "x", "options": {"model": "y"}}},
     "assert.options.model: unknown key (expected one of: connector, metadata)"),
    ({"id": "a", "input": {"role": "assistant", "refusal": 3}}, "input.refusal: must be a string, got number"),
    ({"id": "a", "input": "x", "nmae": "typo"}, "nmae: unknown key (expected one of: id, name, input"),
])
def test_other_unknown_shapes_stay_refused(tmp_path: Path, line: dict[str, Any], problem: str) -> None:
    path = write(tmp_path, line)
    assert any(p.startswith(f"{path}:1: {problem}") for p in problems(path)), problems(path)


# ------------------------------------------------------------------------------------ neuro-san


def test_connections_the_farm_does_not_speak_are_skipped_per_case(tmp_path: Path) -> None:
    (tmp_path / "music").mkdir()
    (tmp_path / "music" / "beatles.hocon").write_text(
        'agent = music_nerd\nconnections = [direct, grpc, service, mcp]\n'
        'interactions = [{text = "Who did Yellow Submarine?", response { text { keywords = Beatles } }}]\n')
    (tmp_path / "music" / "plain.hocon").write_text('agent = music_nerd\ninteractions = [{text = hi}]\n')
    loaded = load_input(str(tmp_path))
    by_id = {c.id: c for c in loaded.cases}
    assert set(by_id) == {"music/beatles@direct", "music/beatles@grpc", "music/beatles@service",
                          "music/beatles@mcp", "music/plain"}
    assert not by_id["music/beatles@direct"].skip and by_id["music/beatles@grpc"].skip
    assert "gRPC service" in (by_id["music/beatles@service"].skip_reason or "")
    assert "dropped its gRPC service in 0.6.0" in (by_id["music/beatles@service"].skip_reason or "")
    assert not by_id["music/beatles@mcp"].skip  # spoken (issue 29)
    assert [n.split(": case ")[1].split(" skipped")[0] for n in loaded.notes] == [
        "music/beatles@grpc", "music/beatles@service"]


@pytest.mark.parametrize("connections", ["{}", "[{}]", "[[grpc]]", "5"])
def test_a_connection_that_is_not_a_name_is_refused(tmp_path: Path, connections: str) -> None:
    path = tmp_path / "case.hocon"
    path.write_text(f"connections = {connections}\ninteractions = [{{text = hi}}]\n")
    with pytest.raises(SuiteError, match="unknown connection"):
        load_input(str(path))


def test_hocon_files_that_are_not_test_cases_are_skipped_with_a_note_in_a_directory(tmp_path: Path) -> None:
    (tmp_path / "music_nerd.hocon").write_text('interactions = [{text = hi}]\n')
    (tmp_path / "music_nerd.initial_memory.hocon").write_text('memory { topic = "music" }\n')
    loaded = load_input(str(tmp_path))
    assert [c.id for c in loaded.cases] == ["music_nerd"]
    assert loaded.notes == [f"{tmp_path}/music_nerd.initial_memory.hocon: skipped: not a test case (no interactions)"]
    with pytest.raises(SuiteError, match="interactions: missing: a test case needs at least one interaction"):
        load_input(str(tmp_path / "music_nerd.initial_memory.hocon"))


def test_a_file_named_only_dot_hocon_gets_an_error_that_does_not_contradict_itself(tmp_path: Path) -> None:
    path = tmp_path / ".hocon"
    path.write_text("interactions = [{text = hi}]\n")
    with pytest.raises(InputError) as err:
        load_input(str(path))
    assert str(err.value) == (f"{path}: the file has an extension but no name: a case id comes from the name "
                              "before .hocon (rename it, e.g. case.hocon)")
