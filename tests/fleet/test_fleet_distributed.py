"""Fleet control on real ``farm worker`` processes (SPEC 13): a rate limit shared by three workers
against an HTTP agent on 127.0.0.1 that counts requests per second (and later plays a provider's
429s), a budget and an exhausted quota against the bundled OpenAI-compatible server, the judge
cache shared through Redis, record/replay from a shared directory, and adaptive runs whose
decided cases' queued runs workers drop.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.support.fleet_helpers import CountingServer, counting_server
from tests.support.fleet_project import (
    COIN,
    KEY,
    calls,
    llm_server,
    report_of,
    write_connector,
    write_prices,
    write_prompt_agent,
    write_suite,
)
from tests.support.servers import Served
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.redis, pytest.mark.slow]

LIMIT = 100


@pytest.fixture(scope="module")
def llm() -> Iterator[Served]:
    with llm_server() as served:
        yield served


def test_three_workers_share_a_rate_limit_and_slow_down_together_on_429(tmp_path, redis_client, farm_worker,
                                                                         farm_cli) -> None:
    workers = [farm_worker(queue="fleet-rate", concurrency=16) for _ in range(3)]
    with counting_server() as (served, server):
        suite = write_suite(tmp_path, "s.jsonl", [{"id": f"c{i}", "input": "go"} for i in range(20)])
        # 10,000 runs, far more than the test sees at 100/s: the sweep must outlast the test (a
        # loaded machine's submitter returns late, after workers have run many of them)
        submitted = farm_cli.run("test", "-i", str(suite), "-n", served.url + "/agent", "--runs", "500",
                                 "--rate-limit", f"*={LIMIT}/s", "--broker", farm_cli.broker, "--queue",
                                 "fleet-rate", "--detach", "--no-history")
        assert submitted.returncode == 0, submitted.stderr
        started = time.time()
        try:
            _steady_then_throttled(server, started)
        except AssertionError as failed:  # say what the fleet was doing, not only what the server saw
            status = farm_cli.run("status", "--broker", farm_cli.broker)
            logs = "\n".join(worker.text()[-1500:] for worker in workers)
            said = f"farm status:\n{status.stdout}{status.stderr}\nworkers:\n{logs}"
            raise AssertionError(f"{failed}\n{said}") from failed
        finally:
            farm_cli.run("cancel", submitted.stdout.strip())


def _until(moment: float) -> None:
    """Let the fleet run until ``moment`` (epoch s): a window of its calls, anchored on one it made."""
    time.sleep(max(0.0, moment - time.time()))


def _steady_then_throttled(server: CountingServer, started: float) -> None:
    # the windows start at the fleet's first call, not at the submission: a loaded machine's
    # workers take a while to begin (a window from the submission could hold seconds of none)
    first_call = wait_for(lambda: server.first(200), 120, "the fleet's first call")
    _until(first_call + 8)
    steady = server.per_second(first_call + 2, first_call + 8)
    assert max(steady) <= LIMIT * 1.05, steady  # never more than the shared limit (+5 %) in any second
    assert min(steady) > 0, steady  # the fleet runs; how close it comes to the limit is a benchmark's figure
    server.capacity = 40  # the provider now answers 429 with Retry-After: 1 beyond 40 a second
    first_429 = wait_for(lambda: server.first(429), 60, "the provider's first 429")
    _until(first_429 + 4)  # four seconds of 429s beyond 40 a second, from the first
    server.capacity = None
    recovered_from = time.time()
    assert server.count(first_429 + 0.2, first_429 + 1.2) <= 0.6 * LIMIT  # the fleet paused and slowed at once
    throttled = server.count(first_429, recovered_from, status=429)
    assert throttled / max(1, server.count(first_429, recovered_from)) < 0.3  # no process kept hammering
    # Recovered: back to what this machine reached before the 429s (its own figure, not a floor in
    # requests/s: a loaded machine reaches less of the limit, and the claim is recovery, not speed)
    # (0.6 of it: seconds later the machine may be busier than it was, as a CI run's other tests make it)
    reached = 0.6 * max(steady)
    deadline, recovered = recovered_from + 40, False
    while time.time() < deadline and not recovered:
        # judged on the one measure the loop watches (the last second, sliding): whole-second buckets
        # can split the same calls and fall just short (56 of 56.4 under a CPU hog)
        recovered = server.count(time.time() - 1, time.time()) >= reached
        time.sleep(0 if recovered else 0.5)  # the shared rate grows back (AIMD: +0.05 of the limit a second)
    assert recovered, (server.per_second(recovered_from, time.time()), steady)
    assert max(server.per_second(started, time.time())) <= LIMIT * 1.05


def test_budget_quota_judge_cache_and_replay_hold_across_workers(tmp_path, redis_client, farm_worker, farm_cli,
                                                               llm) -> None:
    env = {"FARM_TEST_OPENAI_KEY": KEY}  # the connector's key is the workers' own secret, never in the plan
    for _ in range(2):
        farm_worker(queue="fleet", concurrency=4, env=env)
    distributed = ("--broker", farm_cli.broker, "--queue", "fleet", "--no-history", "--no-progress")
    prices = write_prices(tmp_path)
    write_connector(tmp_path, llm.url, max_tokens=40)
    suite = write_prompt_agent(tmp_path, [{"id": "kw", "input": "Budgets hold across the fleet"}])
    project = {"FARM_AGENTS_ROOT": str(tmp_path / "assistants"), "FARM_CONNECTORS_ROOT": str(tmp_path / "connectors"),
               **env}

    out, before = tmp_path / "budget.json", calls(llm)
    done = farm_cli.run("test", "-i", str(suite), "--runs", "300", "--budget", "2", "-o", str(out), *distributed,
                        env={**project, "FARM_PRICES": str(prices)}, timeout=180)
    assert done.returncode == 4, done.stderr
    report = report_of(out)
    assert report["metadata"]["stopped"] == "budget"
    spent = report["metadata"]["budget"]["spent_usd"]
    assert 2.0 - 9 * 0.2 < spent <= 2.0  # 8 runs in flight on two workers: at most a round of reservations left
    assert calls(llm) - before == report["summary"]["total_runs"] < 300  # a dropped run made no call
    assert report["summary"]["cost_usd"] == pytest.approx(spent, abs=1e-6)

    write_connector(tmp_path, llm.url, model="quota-exhausted")
    out = tmp_path / "quota.json"
    done = farm_cli.run("test", "-i", str(suite), "--runs", "50", "-o", str(out), *distributed, env=project)
    assert done.returncode == 5, done.stderr
    assert report_of(out)["metadata"]["stopped"] == "quota" and report_of(out)["summary"]["total_runs"] == 0

    write_connector(tmp_path, llm.url)
    judged = write_suite(tmp_path, "judged.jsonl", [{
        "id": "stable", "input": "cached across workers", "metadata": {"p": 1.0},
        "assert": {"type": "agent", "value": "says 'yes'", "use": "local.llm"}}])
    before = calls(llm)
    done = farm_cli.run("test", "-i", str(judged), "-n", COIN, "--runs", "50", *distributed, env=project)
    assert done.returncode == 0, done.stderr
    assert calls(llm) - before == 1  # 50 runs on two workers, one judge call: the cache is in Redis

    record, recorded, replayed = tmp_path / "calls", tmp_path / "recorded.json", tmp_path / "replayed.json"
    done = farm_cli.run("test", "-i", str(suite), "--runs", "6", "--record", str(record), "-o", str(recorded),
                        *distributed, env=project)
    assert done.returncode == 0, done.stderr
    before = calls(llm)
    done = farm_cli.run("test", "-i", str(suite), "--runs", "6", "--replay", str(record), "-o", str(replayed),
                        *distributed, env=project)
    assert done.returncode == 0, done.stderr
    assert calls(llm) == before  # the workers replayed every call from the shared directory
    outputs = [sorted((d["run"], str(d["output"])) for d in report_of(path)["results"][0]["run_details"])
               for path in (recorded, replayed)]
    assert outputs[0] == outputs[1] and len(outputs[0]) == 6


def test_adaptive_runs_on_workers_drop_the_queued_runs_of_decided_cases(tmp_path, redis_client, farm_worker,
                                                                          farm_cli, counting_agent) -> None:
    farm_worker(queue="fleet-adaptive", concurrency=4)
    agent = counting_agent("tests/agents/coin.py:respond")
    suite = write_suite(tmp_path, "coins.jsonl", [
        {"id": f"p{p}", "input": "flip", "expected": "yes", "metadata": {"p": p}} for p in (0.0, 0.5, 0.8, 1.0)])
    common = ("test", "-i", str(suite), "-n", agent.ref, "--runs", "30", "--min-pass-rate", "0.8", "--no-history",
              "--broker", farm_cli.broker, "--queue", "fleet-adaptive")
    full, adaptive = tmp_path / "full.json", tmp_path / "adaptive.json"
    assert farm_cli.run(*common, "-o", str(full)).returncode == 1
    agent.assert_once_each(120)
    agent.clear()
    assert farm_cli.run(*common, "--adaptive", "-o", str(adaptive)).returncode == 1
    verdicts = {c["id"]: c["case_passed"] for c in report_of(full)["results"]}
    cases = report_of(adaptive)["results"]
    assert {c["id"]: c["case_passed"] for c in cases} == verdicts  # the full sweep's verdict, every case
    assert all(c["adaptive"] and c["runs_planned"] == 30 and c["decided_after"] for c in cases)
    summary = report_of(adaptive)["summary"]
    assert summary["runs_saved"] == 120 - summary["total_runs"] >= 20  # exact curtailment saves ~45 here
    agent.assert_once_each(summary["total_runs"])  # a dropped run was never called
