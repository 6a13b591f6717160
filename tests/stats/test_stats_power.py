"""``farm.stats.power`` against ``farm compare`` itself (SPEC 25): the critical count is where
compare's verdict turns, the smallest detectable drop and the runs needed are the least that
reach power 0.8 (a simulation of one case: benchmarks/bench_power.py)."""

from __future__ import annotations

import pytest

from farm.stats.compare import CaseSnapshot, SweepSnapshot, compare
from farm.stats.power import critical_passes, detection_power, runs_to_detect, smallest_detectable_drop

ALPHA, MIN_DROP = 0.1, 10.0


def _verdict(base: tuple[int, int], head: tuple[int, int]) -> str:
    def side(sweep_id: str, counts: tuple[int, int]) -> SweepSnapshot:
        return SweepSnapshot(sweep_id=sweep_id, cases=[CaseSnapshot(id="c", runs=counts[1], passed=counts[0])])

    return compare(side("b", base), side("h", head), alpha=ALPHA, min_drop=MIN_DROP).cases[0].verdict


@pytest.mark.parametrize(("base", "head_runs"), [((19, 20), 20), ((48, 50), 50), ((30, 40), 25)])
def test_the_critical_count_is_where_compares_verdict_turns(base: tuple[int, int], head_runs: int) -> None:
    k = critical_passes(*base, head_runs, ALPHA, MIN_DROP)
    assert k >= 0
    assert _verdict(base, (k, head_runs)) == "regressed"
    assert _verdict(base, (k + 1, head_runs)) != "regressed"


def test_the_smallest_detectable_drop_is_the_least_with_power_point_eight() -> None:
    drop = smallest_detectable_drop(48, 50, 50, alpha=ALPHA, min_drop=MIN_DROP)
    assert drop is not None and drop >= MIN_DROP
    assert detection_power(48, 50, 50, drop, alpha=ALPHA, min_drop=MIN_DROP) >= 0.8
    assert detection_power(48, 50, 50, drop - 0.1, alpha=ALPHA, min_drop=MIN_DROP) < 0.8
    # more runs see smaller drops
    more = smallest_detectable_drop(48, 50, 200, alpha=ALPHA, min_drop=MIN_DROP)
    assert more is not None and more < drop


def test_the_runs_to_detect_a_drop_are_the_fewest_that_reach_power_point_eight() -> None:
    n = runs_to_detect(48, 50, 20, alpha=ALPHA, min_drop=MIN_DROP)
    assert n is not None
    assert detection_power(48, 50, n, 20, alpha=ALPHA, min_drop=MIN_DROP) >= 0.8
    assert detection_power(48, 50, n - 1, 20, alpha=ALPHA, min_drop=MIN_DROP) < 0.8
    assert runs_to_detect(48, 50, MIN_DROP, alpha=ALPHA, min_drop=MIN_DROP) is None  # at the threshold: never
    assert runs_to_detect(10, 50, 30, alpha=ALPHA, min_drop=MIN_DROP) is None  # past a 0 % pass rate
