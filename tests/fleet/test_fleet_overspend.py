"""In-process ``--budget`` with 32 calls in flight and an agent that states no ``max_tokens``
(SPEC 15): the reservation is an estimate that keeps the overspend bounded (spend <= budget +
what the calls in flight cost beyond their reservations: here, calls of equal cost, spend <= budget)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.fleet_agents import PRICE, farm_test, usage_server
from tests.support.fleet_project import KEY, MODEL, calls, llm_server, report_of, write_connector, write_suite


@pytest.mark.slow  # starts a farm process, a server or an agent program
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



@pytest.mark.slow  # starts a farm process, a server or an agent program
def test_a_run_refused_after_a_paid_call_is_a_budget_error_that_keeps_its_cost(tmp_path: Path) -> None:
    with usage_server() as (served, server), llm_server() as llm:
        agent = served.url + "/agent"
        write_connector(tmp_path, llm.url, max_tokens=40)  # the judge: it reserves at least 40 tokens, $0.04
        prices = tmp_path / "prices.json"
        prices.write_text(json.dumps({"models": {agent: PRICE, MODEL: PRICE}}))
        suite = write_suite(tmp_path, "s.jsonl", [{"id": "j", "input": "go", "assert": {
            "type": "agent", "value": "says 'yes'", "use": "local.llm"}}])
        out = tmp_path / "report.json"
        done = farm_test("-i", str(suite), "-n", agent, "--runs", "1", "--budget", "0.015", "-o", str(out),
                         env={"FARM_PRICES": str(prices), "FARM_TEST_OPENAI_KEY": KEY,
                              "FARM_CONNECTORS_ROOT": str(tmp_path / "connectors")})
        assert done.returncode == 4, done.stdout + done.stderr
        assert server.calls == 1 and calls(llm) == 0  # the agent was called (paid); the judge was refused
    report = report_of(out)
    [case] = report["results"]
    [detail] = case["run_details"]
    assert (case["runs"], case["errors"], detail["failure_class"]) == (1, 1, "harness:budget")
    assert report["summary"]["cost_usd"] == pytest.approx(0.01)  # its paid call stays in the report
