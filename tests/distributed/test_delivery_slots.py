"""The publish cursor's arithmetic: a flat position in plan order maps to (case, run) exactly once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from farm.distributed.delivery.publish import run_slots
from farm.plan.sweep_plan import CaseSlot


def _cases(runs: list[int]) -> list[CaseSlot]:
    return [CaseSlot(f"c{i}", n, 300.0) for i, n in enumerate(runs)]


@given(st.text(min_size=1, max_size=20), st.integers(min_value=0, max_value=10**6),
       st.floats(min_value=0.001, max_value=1e6, allow_nan=False))
def test_a_case_slot_survives_its_compact_encoding(case_id: str, runs: int, timeout: float) -> None:
    slot = CaseSlot(case_id, runs, timeout)
    assert CaseSlot.decode(slot.encode()) == slot


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
