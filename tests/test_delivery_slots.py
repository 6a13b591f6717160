"""The publish cursor's arithmetic: a flat position in plan order maps to (case, run) exactly once."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from farm.delivery.publish import run_slots


def _cases(runs: list[int]) -> list[Any]:
    return [SimpleNamespace(id=f"c{i}", plan=SimpleNamespace(runs=n)) for i, n in enumerate(runs)]


def test_slots_start_at_the_cursor_in_plan_order() -> None:
    cases = _cases([2, 3])
    assert [(c.id, n) for c, n in run_slots(cases)] == [("c0", 1), ("c0", 2), ("c1", 1), ("c1", 2), ("c1", 3)]
    assert [(c.id, n) for c, n in run_slots(cases, 3)] == [("c1", 2), ("c1", 3)]
    assert list(run_slots(cases, 5)) == []


@given(st.lists(st.integers(min_value=0, max_value=6), max_size=8), st.data())
def test_any_cursor_splits_the_plan_without_gap_or_overlap(runs: list[int], data: st.DataObject) -> None:
    cases = _cases(runs)
    everything = [(c.id, n) for c, n in run_slots(cases)]
    cursor = data.draw(st.integers(min_value=0, max_value=len(everything)))
    assert everything[:cursor] + [(c.id, n) for c, n in run_slots(cases, cursor)] == everything
    assert len(set(everything)) == len(everything) == sum(runs)
