"""Load bias on simulated sweeps (``tests/support/simulated_load.py``; more sweeps and figures:
``benchmarks/bench_load_bias.py``): load-blind agents raise few false alarms, a load-sensitive one
is found when the load varies."""

from __future__ import annotations

import pytest

from tests.support.simulated_load import SHAPES, measure


@pytest.mark.parametrize("shape", SHAPES)
def test_load_blind_agents_raise_at_most_five_percent_false_alarms(shape: str) -> None:
    rates = measure(shape, 40, seed=7)
    assert rates.null_alarms <= 2  # 5 % of 40 sweeps of ten load-blind cases
    assert rates.blind_alarms <= 2


def test_a_load_sensitive_agent_is_found_when_the_load_varies() -> None:
    rates = measure("ramp", 40, runs=80, seed=7)
    assert rates.sensitive_flagged >= 30  # 75 %
