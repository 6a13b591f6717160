"""Waiting for capacity is not running (SPEC 15): the run's clock stops its timeouts while a call
waits for a slot; a run starved before its first call did not run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from farm.run.waiting import QueueWaitError, RunClock, new_run_clock, queued_timeout, waiting
from tests.support.fleet_agents import farm_test, py_calls, write_py_agent
from tests.support.fleet_project import report_of, write_suite


def test_a_timeout_stops_while_the_run_waits_for_a_slot() -> None:
    async def scenario() -> RunClock:
        with new_run_clock() as clock:
            async with queued_timeout(0.3):
                async with waiting():
                    await asyncio.sleep(0.5)  # longer than the timeout: queueing, not running
                await asyncio.sleep(0.1)  # the run's own time: 0.1 of its 0.3 s
            return clock

    clock = asyncio.run(scenario())
    assert clock.queued_s >= 0.5 and clock.calls == 0


def test_the_run_still_times_out_on_its_own_time() -> None:
    async def scenario() -> None:
        with new_run_clock():
            async with queued_timeout(0.2):
                async with waiting():
                    await asyncio.sleep(0.1)
                await asyncio.sleep(5)

    with pytest.raises(TimeoutError):
        asyncio.run(scenario())


def test_a_wait_past_the_bound_marks_the_run_starved() -> None:
    async def scenario() -> RunClock:
        with new_run_clock() as clock:
            with pytest.raises(QueueWaitError):
                async with waiting():
                    raise QueueWaitError("no slot")
            return clock

    assert asyncio.run(scenario()).starved


@pytest.mark.slow  # starts a farm process, a server or an agent program
def test_runs_starved_before_their_first_call_did_not_run(tmp_path: Path) -> None:
    agent, directory = write_py_agent(tmp_path, delay_s=3.0)
    suite = write_suite(tmp_path, "s.jsonl", [{"id": "c", "input": "go"}])
    out = tmp_path / "report.json"
    done = farm_test("-i", str(suite), "-n", agent, "--runs", "4", "--parallel", "4", "--rate-limit",
                    "*=1conc", "--max-queue-wait", "0.5s", "-o", str(out))
    assert done.returncode in (0, 1), done.stderr
    report = report_of(out)
    [case] = report["results"]
    assert py_calls(directory) == case["runs"] == 1  # one run held the only slot for 3 s
    assert (case["runs_planned"], case["runs_not_run"], report["summary"]["runs_not_run"]) == (4, 3, 3)
    assert case["errors"] == 0  # not errors, not timeouts: they did not run


@pytest.mark.slow  # starts a farm process, a server or an agent program
def test_a_bad_max_queue_wait_is_exit_2(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "s.jsonl", [{"id": "c", "input": "go"}])
    agent, _ = write_py_agent(tmp_path)
    done = farm_test("-i", str(suite), "-n", agent, "--max-queue-wait", "soon")
    assert done.returncode == 2 and "--max-queue-wait: not a duration" in done.stderr, done.stderr




@pytest.mark.slow  # starts a farm process, a server or an agent program
def test_a_token_limit_debits_a_python_agents_reported_usage(tmp_path: Path) -> None:
    agent, directory = write_py_agent(tmp_path)  # each call reports 10 tokens
    suite = write_suite(tmp_path, "s.jsonl", [{"id": "c", "input": "go"}])
    out = tmp_path / "report.json"
    done = farm_test("-i", str(suite), "-n", agent, "--runs", "5", "--parallel", "1", "--rate-limit", "*=20tok/m",
                     "--max-queue-wait", "1s", "-o", str(out))
    assert done.returncode in (0, 1), done.stderr
    [case] = report_of(out)["results"]
    # 20 tokens a minute: two calls fill it, the third goes on what is left, then a 30 s debt
    assert (py_calls(directory), case["runs"], case["runs_not_run"]) == (3, 3, 2)


def test_a_whole_test_budget_stops_while_every_run_of_the_case_waits() -> None:
    import time

    from farm.models import Case
    from farm.sweep.deadlines import TestBudgets

    case = Case(id="t", format="neuro-san", turns=[], test_timeout_s=60.0)
    budgets = TestBudgets()
    end = budgets.start(case)
    assert end is not None
    first, second = budgets.waits(case), budgets.waits(case)
    assert first is not None and second is not None
    first.paused()
    time.sleep(0.2)  # one run waits, the other runs: the budget runs on
    assert budgets.end(case) == end
    before = time.time()
    second.paused()
    time.sleep(0.3)  # both wait: the budget stops
    second.resumed()
    after = time.time()
    moved = budgets.end(case)
    # it stopped for the pause, no more: measured around it, not a ceiling a busy machine could pass
    assert moved is not None and 0.3 <= moved - end <= after - before
    first.resumed()
    first.finished()
    second.finished()
    assert budgets.end(case) == moved
