"""``prepare_sweep`` reads a suite once, in batches (``farm.api.PLAN_BATCH``): here batches of
4 cases, so every rule that spans the whole suite is crossed between batches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from farm.api import TestSettings, prepare_sweep
from farm.api import prepare as sweep
from farm.errors import InputError, SuiteError

AGENT = "py:tests/agents/distributed.py:by_run"


def write(path: Path, *lines: Any) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
                    encoding="utf-8")
    return path


def case(i: int, **more: Any) -> dict[str, Any]:
    return {"id": f"C{i:02d}", "input": f"ping {i}", **more}


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep, "PLAN_BATCH", 4)


def test_a_suite_planned_in_batches_is_the_suite_planned_whole(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.jsonl", *(case(i, timeout=1 + i) for i in range(10)), case(10, skip=True, timeout=2))
    plan = prepare_sweep(TestSettings(input=str(suite), name=AGENT, runs=3)).plan
    assert plan.case_ids == [f"C{i:02d}" for i in range(11)]
    assert (plan.total_cases, plan.total_runs, plan.max_case_timeout_s) == (11, 31, 10.0)


def test_every_problem_of_every_batch_is_listed_duplicates_last(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.jsonl", case(0), case(1), case(2), case(3), case(4), "oops", case(0), case(7),
                  case(8, assert_=1), case(9, timeout="soon"))
    text = suite.read_text().replace('"assert_"', '"assert"')
    suite.write_text(text)
    with pytest.raises(SuiteError) as info:
        prepare_sweep(TestSettings(input=str(suite), name=AGENT))
    lines = [str(p).split(": ")[0] for p in info.value.problems]
    assert lines == [f"{suite}:6", f"{suite}:9", f"{suite}:10", f"{suite}:7"]
    assert str(info.value.problems[-1]).endswith(f"duplicate id 'C00' (first at {suite}:1)")


def test_selection_counts_across_batches(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.jsonl", *(case(i) for i in range(9)), case(9, skip=True))
    chosen = prepare_sweep(TestSettings(input=str(suite), name=AGENT, run_pattern="^C0[78]$")).plan
    assert chosen.case_ids == ["C07", "C08"]
    with pytest.raises(InputError, match="no case id matches"):
        prepare_sweep(TestSettings(input=str(suite), name=AGENT, run_pattern="^D"))
    with pytest.raises(InputError, match="no runnable cases: the 1 case matching -k 'C09' is skipped"):
        prepare_sweep(TestSettings(input=str(suite), name=AGENT, patterns=("C09",)))


def test_collect_only_keeps_the_ids_and_no_case(tmp_path: Path) -> None:
    """``--collect-only`` at a million cases: the ids and the totals, not a million planned cases."""
    suite = write(tmp_path / "s.jsonl", *(case(i) for i in range(9)), case(9, skip=True))
    prepared = prepare_sweep(TestSettings(input=str(suite), name=AGENT, runs=2, collect_only=True))
    expected = [f"C{i:02d}" for i in range(9)] + ["C09  (skipped: skip: true)"]  # a skipped case is marked
    assert prepared.listed == expected and list(prepared.plan.cases) == []
    assert (prepared.plan.total_cases, prepared.plan.total_runs) == (10, 19)
