"""What the terminal shows of a case id or an agent's error is the text itself: no emoji codes
turned into pictures, no line wrapped at the console's width (CI logs grep these lines)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.farm_process import farm

pytestmark = pytest.mark.slow  # a farm process each

AGENT = '''
def fails(messages):
    return "no :fire: here"


def raises(messages):
    raise RuntimeError("the tool :fire: refused the call because " + "the quota of the day was spent " * 4)
'''


def test_a_case_id_with_an_emoji_code_is_printed_as_written(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    case = {"id": "C:fire:", "input": "hi", "assert": {"type": "contains", "value": "water"}}
    (tmp_path / "s.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    done = farm("test", "-i", "s.jsonl", "-n", "py:agent.py:fails", "--no-progress", "--no-history", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "C:fire:" in done.stderr and "\N{FIRE}" not in done.stderr, done.stderr


def test_an_agent_error_in_message_mode_is_one_line_as_written(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    done = farm("test", "-m", "hi", "-n", "py:agent.py:raises", "--no-progress", "--no-history", cwd=tmp_path)
    message = "the tool :fire: refused the call because " + "the quota of the day was spent " * 4
    assert done.returncode != 0
    assert f"error: {message}" in done.stderr.splitlines(), done.stderr
