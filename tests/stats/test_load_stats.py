"""Load (SPEC 25), the pure part: each case's ``load_bias`` split at the sweep's median
``in_flight`` and tested, ``--ramp``'s levels read and counted (the sweeps themselves:
``tests/stats/test_load.py``)."""

from __future__ import annotations

import pytest

from farm.models import CaseStats, RunResult, RunStatus
from farm.reports.load import load_text
from farm.stats.load_bias import InFlightTally, flag_load_bias, high_from, sweep_median
from farm.stats.ramp import RampTally, parse_ramp, percentile


def _case(case_id: str, runs: list[tuple[int, bool]]) -> CaseStats:
    tally = InFlightTally()
    for n, (in_flight, passed) in enumerate(runs, start=1):
        tally.add(RunResult(case_id=case_id, run=n, status=RunStatus.PASSED if passed else RunStatus.FAILED,
                            in_flight=in_flight))
    return CaseStats.model_construct(id=case_id, load_bias=tally.figures())


def test_the_median_split_tests_each_case_and_flags_the_one_that_fails_under_load() -> None:
    sensitive = _case("hot", [(1, True)] * 10 + [(8, False)] * 10)
    blind = _case("cold", [(1, True), (1, False)] * 5 + [(8, True), (8, False)] * 5)
    summary = flag_load_bias([sensitive, blind])
    assert summary is not None and summary.flagged == ["hot"] and summary.cases == 2
    assert summary.median_in_flight == 4.5 and summary.high_from == 8 and summary.max_in_flight == 8
    hot = sensitive.load_bias
    assert hot is not None and (hot.high_runs, hot.high_passed, hot.low_runs, hot.low_passed) == (10, 0, 10, 10)
    assert hot.flagged and hot.q is not None and hot.q < 0.001
    assert blind.load_bias is not None and not blind.load_bias.flagged and blind.load_bias.q == 1.0
    assert "hot (0.0% vs 100.0%" in summary.line


def test_a_steady_sweep_compares_the_runs_made_while_it_filled_up_with_the_rest() -> None:
    assert sweep_median([_case("c", [(1, True), (2, True)] + [(4, True)] * 8).load_bias]) == 4  # type: ignore[list-item]
    assert high_from({1, 2, 4}, 4) == 4  # none above the median: the median's runs are the high ones
    assert high_from({1, 2, 4}, 2) == 4
    assert high_from({4}, 4) is None  # every run at the same load: nothing to compare
    assert flag_load_bias([_case("c", [(1, True)] * 5)]) is None
    assert flag_load_bias([CaseStats.model_construct(id="old", load_bias=None)]) is None  # no run knew its load


def test_a_skipped_run_or_one_without_a_load_is_not_counted() -> None:
    tally = InFlightTally()
    tally.add(RunResult(case_id="c", run=1, status=RunStatus.SKIPPED, in_flight=3))
    tally.add(RunResult(case_id="c", run=2, status=RunStatus.PASSED))
    assert tally.figures() is None


def test_ramp_levels_are_read_strictly_and_counted_per_level() -> None:
    assert parse_ramp("2,4, 8,16") == (2, 4, 8, 16)
    for bad, said in (("", "separated by commas"), ("2,,4", "separated by commas"), ("2,x", "'x' is not a whole"),
                      ("0,2", "between 1 and"), ("2,2", "given twice"), ("-1", "not a whole number")):
        with pytest.raises(ValueError, match=said):
            parse_ramp(bad)
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0 and percentile([1.0, 2.0, 3.0, 4.0], 0.95) == 4.0
    tally = RampTally([1, 4])
    assert [tally.level_of(run, 4) for run in (1, 2, 3, 4)] == [0, 0, 1, 1]  # an equal share a level, in order
    assert tally.level_of(1, 1) == 0  # a skipped case's one placeholder
    tally.add(RunResult(case_id="c", run=1, status=RunStatus.PASSED, duration_ms=10), 2)
    tally.add(RunResult(case_id="c", run=2, status=RunStatus.TIMEOUT, duration_ms=50), 2)
    tally.add(RunResult(case_id="c", run=3, status=RunStatus.ERROR, duration_ms=5, failure_class="infra:429"), 2)
    ramp = tally.figures(runs=1)
    assert [(lv.concurrency, lv.runs, lv.passed, lv.timeouts, lv.rate_limited) for lv in ramp.levels] == [
        (1, 1, 1, 0, 0), (4, 2, 0, 1, 1)]
    assert ramp.levels[1].p50_ms == 5 and ramp.levels[1].p95_ms == 50
    assert ramp.line == "ramp (pass rate by runs in flight): 1 in flight 100.0%, 4 0.0% (1 429s, 1 timeouts)"


def test_a_case_s_load_in_words() -> None:
    sensitive = _case("hot", [(1, True)] * 10 + [(8, False)] * 10)
    flag_load_bias([sensitive])
    assert load_text(sensitive.load_bias) == "8+ in flight: 0.0% of 10 runs; fewer: 100.0% of 10 (q=1.1e-05, flagged)"
    assert load_text(_case("new", [(1, True)]).load_bias) is None  # not split yet
