"""``farm test --estimate`` (SPEC 18): the real CLI in a subprocess against the bundled
OpenAI-compatible server (priced, in its own process; calls counted at the server). The estimate
is within 20 % of what the sweep then costs and calls, from a probe or from the history."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fleet_project import (
    calls,
    farm_env,
    llm_server,
    report_of,
    write_connector,
    write_prices,
    write_prompt_agent,
)
from tests.support.servers import ROOT, Served

CASES = [{"id": f"kw{i}", "input": f"Estimates price sweeps before they run, number {i}" + " really" * i}
         for i in range(4)]


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    with llm_server() as served:
        yield served


def farm(root: Path, *args: str, **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = farm_env(root, FARM_PRICES=str(root / "prices.json"), PYTHONPATH=str(ROOT), **env_extra)
    return subprocess.run([sys.executable, "-m", "farm", "test", "--no-progress", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def project(root: Path, server: Served) -> Path:
    write_connector(root, server.url, max_tokens=40)
    write_prices(root)
    return write_prompt_agent(root, CASES)


def figure(output: str, name: str) -> float:
    line = next(line for line in output.splitlines() if line.strip().startswith(f"{name}:"))
    return float(line.split(":", 1)[1].split()[0].replace("$", "").replace(",", ""))


def test_a_probe_estimate_is_within_20_percent_of_the_sweep_and_runs_nothing_else(tmp_path: Path,
                                                                                   server: Served) -> None:
    suite = project(tmp_path, server)
    before = calls(server)
    estimate = farm(tmp_path, "-i", str(suite), "--runs", "15", "--no-history", "--estimate")
    assert estimate.returncode == 0, estimate.stderr
    assert calls(server) - before == 1  # one probe call: one agent, no judge
    assert "probe: one call to each agent" in estimate.stdout and "case kw0" in estimate.stdout
    assert not list(suite.parent.glob("output-*"))  # no report written
    expected_calls, expected_cost = figure(estimate.stdout, "calls"), figure(estimate.stdout, "cost")
    before = calls(server)
    out = tmp_path / "r.json"
    sweep = farm(tmp_path, "-i", str(suite), "--runs", "15", "--no-history", "-o", str(out))
    assert sweep.returncode in (0, 1), sweep.stderr
    actual_calls, actual_cost = calls(server) - before, report_of(out)["summary"]["cost_usd"]
    assert actual_calls == 60
    assert abs(expected_calls - actual_calls) <= 0.2 * actual_calls
    assert abs(expected_cost - actual_cost) <= 0.2 * actual_cost, (expected_cost, actual_cost)


def test_an_estimate_from_the_history_makes_no_call(tmp_path: Path, server: Served) -> None:
    suite = project(tmp_path, server)
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    out = tmp_path / "r.json"
    recorded = farm(tmp_path, "-i", str(suite), "--runs", "5", "--history", url, "-o", str(out))
    assert recorded.returncode in (0, 1), recorded.stderr
    per_run = report_of(out)["summary"]["cost_usd"] / 20
    before = calls(server)
    estimate = farm(tmp_path, "-i", str(suite), "--runs", "25", "--history", url, "--estimate")
    assert estimate.returncode == 0, estimate.stderr
    assert calls(server) == before
    assert "history: sweep " in estimate.stdout and "no call made" in estimate.stdout
    assert figure(estimate.stdout, "calls") == 100
    assert abs(figure(estimate.stdout, "cost") - per_run * 100) <= 0.2 * per_run * 100


def test_an_estimate_with_no_history_creates_none(tmp_path: Path, server: Served) -> None:
    """A read never creates: neither the default history (nor its data directory) nor a --history file."""
    suite = project(tmp_path, server)
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    by_default = farm(tmp_path, "-i", str(suite), "--runs", "3", "--estimate", FARM_DATA_DIR=str(data))
    assert by_default.returncode == 0, by_default.stderr
    assert "probe: one call" in by_default.stdout
    given = farm(tmp_path, "-i", str(suite), "--runs", "3", "--estimate", "--history",
                 f"sqlite:///{elsewhere / 'h.sqlite'}", FARM_DATA_DIR=str(data))
    assert given.returncode == 0, given.stderr
    assert not data.exists() and not elsewhere.exists()


def test_workers_without_estimate_is_exit_2(tmp_path: Path, server: Served) -> None:
    suite = project(tmp_path, server)
    before = calls(server)
    done = farm(tmp_path, "-i", str(suite), "--no-history", "--workers", "3")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--workers 3: only with --estimate" in done.stderr and calls(server) == before


def test_an_estimate_over_the_budget_exits_4_and_under_it_0(tmp_path: Path, server: Served) -> None:
    suite = project(tmp_path, server)
    over = farm(tmp_path, "-i", str(suite), "--runs", "50", "--no-history", "--estimate", "--budget", "0.5")
    assert over.returncode == 4, over.stdout + over.stderr
    assert "over budget: cost $" in over.stdout and "over the budget of $0.5" in over.stdout
    under = farm(tmp_path, "-i", str(suite), "--runs", "1", "--no-history", "--estimate", "--budget", "100")
    assert under.returncode == 0, under.stdout + under.stderr
    assert "within the budget of $100" in under.stdout


def test_the_wall_time_follows_lanes_and_never_beats_the_rate_limit() -> None:
    from farm.estimate.forecast import PlannedCalls, forecast
    from farm.estimate.spend import PerRun
    from farm.plan.rate_specs import RateLimit

    calls = PlannedCalls(runs=100, agent_calls=100, judge_calls=0, by_key={"llm": 100})
    basis = PerRun(runs=10, tokens=50.0, cost_usd=0.01, judge_tokens=None, judge_cost_usd=None, run_ms=1000.0)
    free = forecast(calls, basis, parallel=10, workers=2, limits=[])
    assert (free.wall_s, free.lanes, free.tokens, free.limited_by) == (5.0, 20, 5000, None)
    assert free.cost_usd == pytest.approx(1.0)
    limited = forecast(calls, basis, parallel=10, workers=2, limits=[("llm", RateLimit(requests_per_s=1.0))])
    assert limited.wall_s == 100.0 and limited.limited_by == "llm 60/m (calls)"
    capped = forecast(calls, basis, parallel=10, workers=2, limits=[("llm", RateLimit(concurrency=4))])
    assert capped.lanes == 4 and capped.wall_s == 25.0


def test_a_budget_below_one_probe_call_says_the_probe_would_exceed_it(tmp_path: Path, server: Served) -> None:
    suite = project(tmp_path, server)
    estimate = farm(tmp_path, "-i", str(suite), "--runs", "5", "--no-history", "--estimate", "--budget", "0.0000001")
    assert estimate.returncode == 4, estimate.stderr
    assert "the probe itself would exceed the budget of $1e-07" in estimate.stdout, estimate.stdout
    assert "wall:" not in estimate.stdout and "cost unknown" not in estimate.stdout


def test_an_estimate_from_the_history_says_the_drop_each_case_can_see_and_what_detect_needs(
        tmp_path: Path, server: Served) -> None:
    suite = project(tmp_path, server)
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    recorded = farm(tmp_path, "-i", str(suite), "--runs", "10", "--history", url, "-o", str(tmp_path / "r.json"))
    assert recorded.returncode in (0, 1), recorded.stderr
    counts = {c["id"]: (c["passed"], c["runs"]) for c in report_of(tmp_path / "r.json")["results"]}
    estimate = farm(tmp_path, "-i", str(suite), "--runs", "30", "--history", url, "--estimate", "--detect", "40")
    assert estimate.returncode == 0, estimate.stderr
    assert "power (farm compare at alpha 0.1, min drop 10 points, power 0.8" in estimate.stdout
    from farm.stats.power import runs_to_detect, smallest_detectable_drop

    for case_id, (passed, runs) in counts.items():
        line = next(line for line in estimate.stdout.splitlines() if line.strip().startswith(f"{case_id}:"))
        drop = smallest_detectable_drop(passed, runs, 30, alpha=0.1, min_drop=10)
        assert (f"a drop of {drop:g} points" if drop is not None else "no drop at all") in line, line
        needed = runs_to_detect(passed, runs, 40, alpha=0.1, min_drop=10)
        assert needed is None or f"a 40-point drop needs {needed} runs" in line, line
    assert "to detect a 40-point drop in every case:" in estimate.stdout
    refused = farm(tmp_path, "-i", str(suite), "--detect", "40")
    assert refused.returncode == 2 and "--detect 40: only with --estimate" in refused.stderr
