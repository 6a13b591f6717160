"""Load (SPEC 25) end to end: each run's ``in_flight``, each case's ``load_bias`` and ``farm test
--ramp``, against a real HTTP agent on 127.0.0.1 that answers wrong while more than k requests are
in flight at it (``tests/support/load_agents.py``), and a load-blind one that does not care. The pure
part: ``tests/stats/test_load_stats.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fleet_agents import farm_test
from tests.support.history_fixtures import take_inbox
from tests.support.load_agents import load_server, write_suite
from tests.support.servers import ROOT

SLOW = pytest.mark.slow
"""Every test here runs ``farm test`` in a subprocess (the fast lane leaves them out)."""


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
    done = farm_test("-i", str(suite), "--arm", "a=http://127.0.0.1:9/agent", "--arm", "b=http://127.0.0.1:9/b",
                     "--ramp", "2,4")
    assert done.returncode == 2 and "--ramp and --arm/--matrix" in done.stderr, done.stderr


@SLOW
def test_the_ramp_shows_the_pass_rate_falling_above_k_in_every_format(tmp_path: Path, farm_data_dir: Path) -> None:
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
    assert one["p50_ms"] > 0 and one["p95_ms"] >= one["p50_ms"] and eight["timeouts"] == 0
    assert report["summary"]["total_runs"] == 24
    assert ramp["line"] in done.stderr and "ramp (pass rate by runs in flight): 1 in flight 100.0%" in done.stderr
    in_flight = [json.loads(line)["in_flight"] for line in (tmp_path / "r.jsonl").read_text().splitlines()
                 if '"type": "result"' in line]
    assert len(in_flight) == 24 and min(in_flight) == 1 and max(in_flight) > 2
    assert "## Ramp" in (tmp_path / "r.md").read_text()
    html = (tmp_path / "r.html").read_text()
    assert 'id="chart-ramp"' in html and 'data-concurrency="8"' in html
    assert '"ramp"' in (tmp_path / "r.xml").read_text()
    (journal,) = (farm_data_dir / "journals").glob("*.jsonl")  # farm report rebuilds the ramp from it
    replayed = subprocess.run([sys.executable, "-m", "farm", "report", str(journal), "-o",
                               str(tmp_path / "again.json")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert replayed.returncode == 1, replayed.stderr  # the sweep's own exit code
    again = json.loads((tmp_path / "again.json").read_text())["summary"]["ramp"]
    assert again["levels"] == ramp["levels"] and again["runs"] == 4


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


@SLOW
def test_the_history_keeps_each_case_s_load_bias(tmp_path: Path) -> None:
    import os
    import sqlite3
    import subprocess
    import sys

    from tests.support.servers import ROOT

    suite = write_suite(tmp_path / "s.jsonl")
    database = tmp_path / "history.sqlite"
    with load_server(k=None, delay_s=0.1) as (served, _):
        done = subprocess.run([sys.executable, "-m", "farm", "test", "--no-progress", "-i", str(suite), "-n",
                               served.url + "/agent", "--runs", "6", "--parallel", "3", "--history",
                               f"sqlite:///{database}"], cwd=ROOT, capture_output=True, text=True, timeout=240,
                              env={k: v for k, v in os.environ.items() if k != "FARM_BROKER_URL"})
    assert done.returncode == 1, done.stderr  # the odd runs fail
    take_inbox(f"sqlite:///{database}")
    with sqlite3.connect(database) as conn:
        (stored,) = conn.execute("SELECT load_bias FROM farm_case_results").fetchone()
    bias = json.loads(stored)
    assert sum(c["runs"] for c in bias["in_flight"]) == 6 and sum(c["passed"] for c in bias["in_flight"]) == 3


@SLOW
def test_the_estimate_counts_every_level_of_a_ramp(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", cases=2)
    with load_server(k=None, delay_s=0.0) as (served, _):
        done = farm_test("-i", str(suite), "-n", served.url + "/agent", "--runs", "5", "--ramp", "2,4,8,16",
                         "--estimate")
    assert done.returncode == 0, done.stderr
    assert "estimate: 2 cases, 40 runs" in done.stdout
    assert "ramp: 4 levels (2, 4, 8, 16 in flight) × 5 runs of each case = 20 runs per case" in done.stdout
