"""Load (SPEC 25): each run's ``in_flight``, each case's ``load_bias`` and ``farm test --ramp``,
against a real HTTP agent on 127.0.0.1 that answers wrong while more than k requests are in
flight at it (``tests/load_agents.py``), and a load-blind one that does not care."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.models import CaseStats, RunResult, RunStatus
from farm.reports.load import load_text
from farm.stats.load_bias import InFlightTally, flag_load_bias, high_from, sweep_median
from farm.stats.ramp import RampTally, parse_ramp, percentile
from tests.fleet_agents import farm_test
from tests.load_agents import load_server, write_suite

SLOW = pytest.mark.slow
"""The tests that run ``farm test`` in a subprocess (the fast lane leaves them out)."""


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
    tally.add(0, RunResult(case_id="c", run=1, status=RunStatus.PASSED, duration_ms=10))
    tally.add(1, RunResult(case_id="c", run=2, status=RunStatus.TIMEOUT, duration_ms=50))
    tally.add(1, RunResult(case_id="c", run=3, status=RunStatus.ERROR, duration_ms=5, failure_class="infra:429"))
    ramp = tally.figures(runs=1)
    assert [(lv.concurrency, lv.runs, lv.passed, lv.timeouts, lv.rate_limited) for lv in ramp.levels] == [
        (1, 1, 1, 0, 0), (4, 2, 0, 1, 1)]
    assert ramp.levels[1].p50_ms == 5 and ramp.levels[1].p95_ms == 50
    assert ramp.line == "ramp (pass rate by runs in flight): 1 in flight 100.0%, 4 0.0% (1 429s, 1 timeouts)"


@SLOW
@pytest.mark.parametrize(("value", "said"), [("2,x", "'x' is not a whole number"), ("0", "between 1 and"),
                                             ("4,4", "4 is given twice")])
def test_a_bad_ramp_exits_2_naming_the_value(tmp_path: Path, value: str, said: str) -> None:
    suite = write_suite(tmp_path / "s.jsonl")
    done = farm_test("-i", str(suite), "-n", "http://127.0.0.1:9/agent", "--ramp", value)
    assert done.returncode == 2, done.stderr
    assert "--ramp" in done.stderr and said in done.stderr


@SLOW
def test_a_ramp_on_a_broker_or_with_adaptive_runs_exits_2(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl")
    done = farm_test("-i", str(suite), "-n", "http://127.0.0.1:9/agent", "--ramp", "2,4",
                     "--broker", "redis://127.0.0.1:9/0")
    assert done.returncode == 2 and "--ramp runs in-process only" in done.stderr, done.stderr
    done = farm_test("-i", str(suite), "-n", "http://127.0.0.1:9/agent", "--ramp", "2,4", "--adaptive")
    assert done.returncode == 2 and "--ramp and --adaptive" in done.stderr, done.stderr


@SLOW
def test_the_ramp_shows_the_pass_rate_falling_above_k_in_every_format(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", cases=2)
    out = tmp_path / "r.json"
    with load_server(k=2, delay_s=0.5) as (served, server):
        done = farm_test("-i", str(suite), "-n", served.url + "/agent", "--runs", "4", "--ramp", "1,2,8",
                         "-o", str(out), "-o", str(tmp_path / "r.md"), "-o", str(tmp_path / "r.html"),
                         "-o", str(tmp_path / "r.jsonl"), "-o", str(tmp_path / "r.xml"))
    assert done.returncode == 1, done.stderr  # the runs at 8 in flight fail
    assert server.peak > 2
    report = json.loads(out.read_text())
    ramp = report["summary"]["ramp"]
    assert ramp["runs"] == 4 and [lv["concurrency"] for lv in ramp["levels"]] == [1, 2, 8]
    assert all(lv["runs"] == 8 for lv in ramp["levels"])  # 2 cases x 4 runs at each level
    one, _, eight = ramp["levels"]
    assert one["pass_rate"] == 100.0 and eight["pass_rate"] < one["pass_rate"]
    assert eight["pass_rate_ci"][0] <= eight["pass_rate"] <= eight["pass_rate_ci"][1]
    assert one["p50_ms"] >= 500 and one["p95_ms"] >= one["p50_ms"] and eight["timeouts"] == 0
    assert report["summary"]["total_runs"] == 24
    assert ramp["line"] in done.stderr and "ramp (pass rate by runs in flight): 1 in flight 100.0%" in done.stderr
    in_flight = [json.loads(line)["in_flight"] for line in (tmp_path / "r.jsonl").read_text().splitlines()
                 if '"type": "result"' in line]
    assert len(in_flight) == 24 and min(in_flight) == 1 and max(in_flight) > 2
    assert "## Ramp" in (tmp_path / "r.md").read_text()
    html = (tmp_path / "r.html").read_text()
    assert 'id="chart-ramp"' in html and 'data-concurrency="8"' in html
    assert '"ramp"' in (tmp_path / "r.xml").read_text()


def _sweep(tmp_path: Path, k: int | None) -> tuple[dict, str]:
    suite = write_suite(tmp_path / "s.jsonl", cases=1)
    out = tmp_path / f"r-{k}.json"
    with load_server(k=k, delay_s=1.0) as (served, _):
        done = farm_test("-i", str(suite), "-n", served.url + "/agent", "--runs", "24", "--parallel", "16",
                         "-o", str(out), "-o", str(tmp_path / f"r-{k}.md"))
    assert done.returncode in (0, 1), done.stderr
    return json.loads(out.read_text()), done.stderr


@SLOW
def test_load_bias_flags_an_agent_that_fails_above_k_in_flight_in_a_normal_sweep(tmp_path: Path) -> None:
    report, stderr = _sweep(tmp_path, k=8)
    bias = report["results"][0]["load_bias"]
    assert bias["flagged"] and bias["q"] <= 0.05 and bias["high_pass_rate"] < bias["low_pass_rate"]
    assert sum(c["runs"] for c in bias["in_flight"]) == 24
    assert all(1 <= d["in_flight"] <= 16 for d in report["results"][0]["run_details"])
    summary = report["summary"]["load_bias"]
    assert summary["flagged"] == ["L1"] and summary["line"] in stderr  # the terminal says it
    assert "Load Bias" in (tmp_path / "r-8.md").read_text()


@SLOW
def test_load_bias_does_not_flag_a_load_blind_agent(tmp_path: Path) -> None:
    report, stderr = _sweep(tmp_path, k=None)
    bias = report["results"][0]["load_bias"]
    assert bias is not None and not bias["flagged"]
    assert report["summary"]["load_bias"]["flagged"] == [] and "load bias" not in stderr  # said only when flagged


def test_a_case_s_load_in_words() -> None:
    sensitive = _case("hot", [(1, True)] * 10 + [(8, False)] * 10)
    flag_load_bias([sensitive])
    assert load_text(sensitive.load_bias) == "8+ in flight: 0.0% of 10 runs; fewer: 100.0% of 10 (q=1.1e-05, flagged)"
    assert load_text(_case("new", [(1, True)]).load_bias) is None  # not split yet
