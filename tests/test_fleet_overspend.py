"""In-process ``--budget`` with 32 calls in flight and an agent that states no ``max_tokens``
(SPEC 15): the reservation is an estimate that keeps the overspend bounded (spend <= budget +
what the calls in flight cost beyond their reservations: here, calls of equal cost, spend <= budget)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fleet_agents import PRICE, farm_test, usage_server
from tests.fleet_project import report_of, write_suite


def test_32_calls_in_flight_cannot_overspend_a_budget_without_max_tokens(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "s.jsonl", [{"id": f"c{i}", "input": "go"} for i in range(3)])
    out = tmp_path / "report.json"
    with usage_server(delay_s=0.2) as (served, server):
        agent = served.url + "/agent"
        prices = tmp_path / "prices.json"
        prices.write_text(json.dumps({"models": {agent: PRICE}}))  # $0.01 a call
        done = farm_test("-i", str(suite), "-n", agent, "--runs", "20", "--parallel", "32", "--budget", "0.1",
                         "-o", str(out), env={"FARM_PRICES": str(prices)})
    assert done.returncode == 4, done.stdout + done.stderr
    report = report_of(out)
    spent = report["metadata"]["budget"]["spent_usd"]
    print(f"calls {server.calls}, spent ${spent:.2f} of $0.10 at 32 in flight")  # before the estimate: 42 calls, $0.42
    assert server.calls == report["summary"]["total_runs"]  # every paid call is a run
    assert spent == pytest.approx(0.01 * server.calls) and spent <= 0.1 + 1e-9

