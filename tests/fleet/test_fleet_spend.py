"""Reported spend is real spend on a fleet (issue 37, item 5; SPEC 26): real redis-server, real
``farm worker`` processes, an HTTP agent that counts its calls at $0.01 each.

- A worker SIGKILLed with paid calls in flight: their answers die with it, the runs go again and
  pay again. The report counted only the stored runs (50 calls made, $0.50; reported $0.42); now
  a call whose answer died counts at its reservation's price, in ``summary.cost_usd`` and
  ``metadata.budget``.
- Each worker process probed a key's cost with a $0 reservation of its own (11 calls for a $0.10
  budget at $0.01): the probe and the dearest call so far are now the sweep's, fleet-wide.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from farm.distributed.fleet.budget import RedisBudgetBackend, paid_usd
from farm.distributed.store import keys
from farm.fleet.budget import Budget
from farm.plan.fleet import BudgetLimit
from farm.run.waiting import QueueWaitError
from tests.support.fleet_agents import PRICE, UsageServer, usage_server
from tests.support.fleet_project import report_of, write_suite
from tests.support.servers import serve_in_thread
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.redis]


def _prices(root: Path, key: str) -> Path:
    path = root / "prices.json"
    path.write_text(json.dumps({"models": {key: PRICE}}))
    return path


def test_one_call_probes_a_keys_cost_for_the_whole_fleet(redis_server, redis_client) -> None:
    async def two_worker_processes() -> None:
        limit = BudgetLimit(max_usd=0.10)
        backends = [RedisBudgetBackend(redis_server) for _ in range(2)]
        first, second = (Budget(backend, "fleet", limit) for backend in backends)
        try:
            assert await first.estimate("agent") == 0.0  # the probe
            with pytest.raises(QueueWaitError):  # another process waits for it instead of probing too
                await second.estimate("agent", max_wait_s=0.3)
            await first.learn("agent", 0.01)
            assert await second.estimate("agent") == 0.01
        finally:
            for backend in backends:
                await backend.aclose()

    asyncio.run(two_worker_processes())


@pytest.mark.parametrize("died", ["in flight", "between learning and settling"])
def test_a_probe_whose_process_died_counts_in_the_spend_at_its_keys_cost(redis_server, redis_client, died) -> None:
    """A key's probe reserves $0 (its cost is not known yet). Its process SIGKILLed with the probe
    in flight, or after the answer taught the fleet its cost but before it settled (two round
    trips), left a paid call the report counted at $0: CI saw a fleet sweep's spend one call
    short. Until it settles, a probe counts at its key's dearest call."""

    async def two_worker_processes() -> None:
        limit = BudgetLimit(max_usd=5.0)
        backends = [RedisBudgetBackend(redis_server) for _ in range(2)]
        dying = Budget(backends[0], "died", limit, probe_ttl_s=0.2)
        survivor = Budget(backends[1], "died", limit)
        try:
            estimate, token = await dying.estimate_probe("agent")
            assert (estimate, token is not None) == (0.0, True)
            await dying.reserve(estimate, 0, probe="agent")  # sent; the answer dies with its process
            if died == "between learning and settling":
                await dying.learn("agent", 0.01, token)
            else:  # the claim lapses (probe_ttl_s): another process probes again
                estimate, token = await survivor.estimate_probe("agent", max_wait_s=30)
                reservation = await survivor.reserve(estimate, 0, probe="agent")
                await survivor.learn("agent", 0.01, token)
                await survivor.settle(reservation, 0.01, 10)
            paid_calls = 2 if died == "in flight" else 1
            assert paid_usd(redis_client.hgetall(keys.budget_key("died")))[0] == pytest.approx(0.01 * paid_calls)
        finally:
            for backend in backends:
                await backend.aclose()

    asyncio.run(two_worker_processes())


@pytest.mark.parametrize("shared", [True, False])
def test_only_the_probe_ends_its_probe(redis_server, redis_client, shared: bool) -> None:
    """A call that never held the claim (one that gave up waiting, or a free one) settling with an
    unknown cost must not end another's live probe: a second $0 probe would start (review of
    issue 37's fix)."""
    from farm.fleet.budget import LocalBudgetBackend

    async def sweep() -> None:
        backend = RedisBudgetBackend(redis_server) if shared else LocalBudgetBackend()
        budget = Budget(backend, "probe-once", BudgetLimit(max_usd=0.10))
        try:
            estimate, token = await budget.estimate_probe("agent")
            assert (estimate, token is not None) == (0.0, True)
            await budget.learn("agent", None)  # someone else's give-back: not the probe's holder
            with pytest.raises(QueueWaitError):  # the probe still runs: no second $0 probe
                await budget.estimate_probe("agent", max_wait_s=0.3)
            await budget.learn("agent", None, token)  # the probe itself, never sent: the next may probe
            assert (await budget.estimate_probe("agent"))[1] is not None
        finally:
            if shared:
                await backend.aclose()

    asyncio.run(sweep())


@pytest.mark.slow
def test_a_worker_that_joins_late_does_not_probe_past_the_budget(tmp_path, redis_client, farm_worker,
                                                                 farm_cli) -> None:
    """The red team's 11 calls for $0.10 at $0.01: a worker process whose first call came when the
    budget was all reserved probed at $0 all the same. Worker B is held (SIGSTOP) until worker A's
    tenth call is in flight, then let go: its first call must reserve what A's cost."""
    early = farm_worker(queue="late", concurrency=1)
    late = farm_worker(queue="late", concurrency=1)
    os.kill(late.process.pid, signal.SIGSTOP)
    suite = write_suite(tmp_path, "s.jsonl", [{"id": f"c{i}", "input": "go"} for i in range(3)])
    out = tmp_path / "r.json"
    with usage_server(delay_s=3.0) as (served, server):
        agent = served.url + "/agent"
        with farm_cli.started("test", "-i", str(suite), "-n", agent, "--runs", "10", "--budget", "0.10",
                              "--broker", farm_cli.broker, "--queue", "late", "--no-history", "--no-progress",
                              "-o", str(out), env={"FARM_PRICES": str(_prices(tmp_path, agent))}) as sweep:
            try:
                # spent $0.09 and $0.01 reserved by the call in flight: the whole budget is taken
                wait_for(lambda: server.calls >= 10 and server.in_flight >= 1, 180, "worker A's tenth call")
                os.kill(late.process.pid, signal.SIGCONT)
                _stdout, stderr = sweep.communicate(timeout=300)
            finally:
                os.kill(late.process.pid, signal.SIGCONT)
        assert sweep.returncode == 4, stderr
        report = report_of(out)
        assert server.calls == 10, f"{server.calls} calls for a $0.10 budget at $0.01 a call"
        assert report["metadata"]["budget"]["spent_usd"] == pytest.approx(0.10)
        assert report["summary"]["cost_usd"] == pytest.approx(0.10)
    assert early.process.poll() is None


@pytest.mark.slow
def test_calls_a_killed_worker_paid_for_count_in_the_reported_spend(tmp_path, redis_client, farm_worker,
                                                                    farm_cli) -> None:
    env = {"FARM_VISIBILITY_TIMEOUT": "4"}  # the dead worker's runs come back in seconds
    victim = farm_worker(queue="spend", concurrency=4, env=env)
    suite = write_suite(tmp_path, "s.jsonl", [{"id": f"c{i}", "input": "go"} for i in range(2)])
    out = tmp_path / "r.json"
    with usage_server(delay_s=1.0) as (served, server):
        agent = served.url + "/agent"
        with farm_cli.started("test", "-i", str(suite), "-n", agent, "--runs", "6", "--budget", "5",
                              "--broker", farm_cli.broker, "--queue", "spend", "--no-history", "--no-progress",
                              "-o", str(out), env={"FARM_PRICES": str(_prices(tmp_path, agent)), **env}) as sweep:
            # past the first call (the key's probe): the calls in flight each reserved $0.01
            wait_for(lambda: server.calls >= 4 and server.in_flight >= 2, 120, "paid calls in flight on the victim")
            victim.kill()
            farm_worker(queue="spend", concurrency=4, env=env)
            _stdout, stderr = sweep.communicate(timeout=300)
        assert sweep.returncode == 0, stderr
        report = report_of(out)
        assert report["summary"]["total_runs"] == 12
        assert server.calls > 12  # the killed calls were paid, and their runs paid again
        # over by at most the victim's calls that had reserved but were not sent yet when it died (4 in
        # flight at most); never short (it was once by one call: the victim's redelivered message and
        # the reconciler's copy of one run both ran on the survivor, the second after the report was
        # built; ``workers.runs.InFlightHere`` drops such a copy)
        paid, reported = 0.01 * server.calls, report["summary"]["cost_usd"]
        assert paid - 1e-9 <= reported <= paid + 0.04 + 1e-9, (reported, server.calls)
        assert report["metadata"]["budget"]["spent_usd"] == pytest.approx(reported)


TWO_TURNS = ('{"interactions": [{"text": "one", "response": {"text": {"keywords": ["no"]}}}, '
             '{"text": "two", "response": {"text": {"keywords": ["no"]}}}]}')
"""One case of two turns; the usage agent answers "no" to an odd run, so run 1 passes."""


class _SecondCallHangs(UsageServer):
    """The usage agent, whose second call (a run's second turn) hangs until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def enter(self) -> None:
        super().enter()
        if self.calls == 2:
            self.release.wait(120)


@pytest.mark.slow
def test_a_call_settled_before_its_worker_died_counts_in_the_reported_spend(tmp_path, redis_client, farm_worker,
                                                                             farm_cli) -> None:
    """A call settles in the budget when its answer comes; its run is stored after its last turn.
    The worker is SIGKILLed during turn 2: turn 1's call was paid and settled, no stored run keeps
    it and no reservation holds it. The report counted stored runs and reservations only: a call
    short (once under load in the killed-worker test above; here every time)."""
    env = {"FARM_VISIBILITY_TIMEOUT": "4"}
    victim = farm_worker(queue="settled", concurrency=1, env=env)
    suite = tmp_path / "two.hocon"
    suite.write_text(TWO_TURNS)
    out = tmp_path / "r.json"
    server = _SecondCallHangs()
    with serve_in_thread(server) as served:
        agent = served.url + "/agent"
        try:
            with farm_cli.started("test", "-i", str(suite), "-n", agent, "--runs", "1", "--budget", "5",
                                  "--broker", farm_cli.broker, "--queue", "settled", "--no-history", "--no-progress",
                                  "-o", str(out), env={"FARM_PRICES": str(_prices(tmp_path, agent)), **env}) as sweep:
                wait_for(lambda: server.calls >= 2, 120, "turn 2's call on the victim")
                victim.kill()
                server.release.set()
                farm_worker(queue="settled", concurrency=1, env=env)
                _stdout, stderr = sweep.communicate(timeout=300)
        finally:
            server.release.set()
    assert sweep.returncode == 0, stderr
    report = report_of(out)
    assert server.calls >= 4  # turn 1 and turn 2 on the victim, both again on the survivor
    paid, reported = 0.01 * server.calls, report["summary"]["cost_usd"]
    # never short; over by at most the victim's reservation for turn 2 if its call never reached the agent
    assert paid - 1e-9 <= reported <= paid + 0.01 + 1e-9, (reported, server.calls)
    assert report["metadata"]["budget"]["spent_usd"] == pytest.approx(reported)
