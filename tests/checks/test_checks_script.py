"""The ``script`` check: user callables resolved relative to the suite, run sync or async."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from farm.checks import evaluate_turn
from farm.checks.base import CheckContext
from farm.checks.script import interpret_result, resolve_script
from farm.checks.spec import parse_assertions
from farm.models import CheckOutcome, Reply, Turn

SCRIPT = """
import asyncio
import threading

def has_keywords(output, input, expected):
    return isinstance(output, dict) and "keywords" in output

def detailed(output, input, expected):
    ok = output == expected
    return {"pass": ok, "message": f"compared {output!r} with {expected!r} for {input!r}"}

async def slow_ok(output, input, expected):
    await asyncio.sleep(0)
    return True

def thread_name(output, input, expected):
    # sync scripts run in a worker thread, not on the event loop's thread
    return threading.current_thread() is not threading.main_thread()

def boom(output, input, expected):
    raise KeyError("no such field")

def says_maybe(output, input, expected):
    return "maybe"

class Weird:
    def __repr__(self):
        raise RuntimeError("cannot show myself")

def weird(output, input, expected):
    return Weird()

NOT_CALLABLE = 3
"""


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    (tmp_path / "checks.py").write_text(SCRIPT)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "rules.py").write_text("def short(output, input, expected):\n    return len(output) < 10\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "test.py").write_text("def Assert(output, input, expected):\n    return output == 'ok'\n")
    return tmp_path


def run(spec: dict[str, Any], reply: Reply, base: Path, **ctx: Any) -> CheckOutcome:
    assertions, issues = parse_assertions(spec, str(base))
    assert issues == []
    turn = Turn(messages=[], assertions=assertions)
    context = CheckContext(base_dir=str(base), **ctx)
    [outcome] = asyncio.run(evaluate_turn(turn, reply, context, 1))
    return outcome


@pytest.mark.parametrize("ref", ["checks:has_keywords", "checks.py:has_keywords"])
def test_module_and_file_forms(suite_dir: Path, ref: str) -> None:
    spec = {"type": "script", "script": ref}
    assert run(spec, Reply(structure={"keywords": ["a"]}), suite_dir).passed
    outcome = run(spec, Reply(text="nothing"), suite_dir)
    assert not outcome.passed
    assert outcome.message == "script returned false"


def test_package_module_and_yao_dotted_form(suite_dir: Path) -> None:
    assert run({"type": "script", "script": "lib.rules:short"}, Reply(text="tiny"), suite_dir).passed
    assert not run({"type": "script", "script": "lib/rules.py:short"}, Reply(text="far too long"), suite_dir).passed
    assert run({"type": "script", "script": "scripts.test.Assert"}, Reply(text="ok"), suite_dir).passed


def test_dict_result_with_message_and_arguments(suite_dir: Path) -> None:
    spec = {"type": "script", "script": "checks:detailed"}
    ok = run(spec, Reply(text="x"), suite_dir, input="question", expected="x")
    assert ok.passed
    bad = run(spec, Reply(text="y"), suite_dir, input="question", expected="x")
    assert not bad.passed
    assert bad.message == "compared 'y' with 'x' for 'question'"
    own = run({**spec, "value": "y"}, Reply(text="y"), suite_dir, input="q", expected="x")
    assert own.passed  # the assertion's own value is the expected when it has one


def test_async_and_threaded(suite_dir: Path) -> None:
    assert run({"type": "script", "script": "checks:slow_ok"}, Reply(text="x"), suite_dir).passed
    assert run({"type": "script", "script": "checks:thread_name"}, Reply(text="x"), suite_dir).passed


def test_exception_fails_even_when_negated(suite_dir: Path) -> None:
    for negate in (False, True):
        outcome = run({"type": "script", "script": "checks:boom", "negate": negate}, Reply(text="x"), suite_dir)
        assert not outcome.passed
        assert outcome.message == "script checks:boom raised KeyError: 'no such field'"


def test_a_result_that_is_neither_bool_nor_dict_fails(suite_dir: Path) -> None:
    outcome = run({"type": "script", "script": "checks:says_maybe"}, Reply(text="x"), suite_dir)
    assert not outcome.passed
    assert outcome.message == "script returned 'maybe'; expected a bool or {'pass': bool, 'message': str}"


def test_same_module_name_in_two_suites_does_not_collide(tmp_path: Path) -> None:
    for name, verdict in (("one", "True"), ("two", "False")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "rules.py").write_text(f"def check(o, i, e):\n    return {verdict}\n")
    assert run({"type": "script", "script": "rules:check"}, Reply(text="x"), tmp_path / "one").passed
    assert not run({"type": "script", "script": "rules:check"}, Reply(text="x"), tmp_path / "two").passed


def test_a_result_that_cannot_even_be_shown_fails_cleanly(suite_dir: Path) -> None:
    outcome = run({"type": "script", "script": "checks:weird"}, Reply(text="x"), suite_dir)
    assert not outcome.passed
    assert outcome.message == "script checks:weird raised RuntimeError: cannot show myself"


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("checks:missing", "'checks:missing': checks has no attribute 'missing'"),
        ("checks:NOT_CALLABLE", "'checks:NOT_CALLABLE': 'NOT_CALLABLE' is not callable"),
        ("nowhere_module_xyz:f", "cannot import module 'nowhere_module_xyz': ModuleNotFoundError"),
        ("nope.py:f", "file not found: "),
        ("justaname", "bad reference 'justaname'"),
    ],
)
def test_resolution_errors(suite_dir: Path, ref: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        resolve_script(ref, suite_dir)
    assert str(info.value).startswith(message)


def test_import_error_inside_the_script(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("raise RuntimeError('bad import')\n")
    with pytest.raises(ValueError, match=r"cannot import .*broken.py: RuntimeError: bad import"):
        resolve_script("broken.py:f", tmp_path)


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (True, (True, "")),
        (False, (False, "script returned false")),
        ({"pass": True}, (True, "")),
        ({"passed": False, "message": "why"}, (False, "why")),
        ({"pass": 1}, (False, "script returned {'pass': 1}; expected a bool or {'pass': bool, 'message': str}")),
        (None, (False, "script returned None; expected a bool or {'pass': bool, 'message': str}")),
    ],
)
def test_interpret_result(result: Any, expected: tuple[bool, str]) -> None:
    assert interpret_result(result) == expected
