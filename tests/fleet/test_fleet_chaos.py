"""The chaos provider (``examples/servers/openai_server.py`` with ``--fault-rate``, SPEC 15) drives
a sweep on three real ``farm worker`` processes: 429s and stalls at 10 % each, seeded, against
answers right with probability 0.5 drawn per answer: every case's counts are exactly the ones the
seed predicts, no run lost or doubled."""

from __future__ import annotations

import sys

import pytest

from tests.support.fleet_project import report_of, write_connector, write_prompt_agent
from tests.support.servers import EXAMPLE_SERVERS, free_port, load_example, serve_subprocess

pytestmark = [pytest.mark.redis, pytest.mark.slow]

SEED, RUNS = 7, 6


def test_a_three_worker_sweep_against_the_chaos_provider_counts_exactly(tmp_path, redis_client, farm_worker,
                                                                       farm_cli) -> None:
    chaos = load_example("chaos")
    env = {"FARM_RETRY_ATTEMPTS": "8", "FARM_TEST_OPENAI_KEY": "unused"}  # few 429s in a row (seeded)
    for _ in range(3):
        farm_worker(queue="chaos", concurrency=4, env=env)
    inputs = [f"chaos case number {i}" for i in range(4)]
    suite = write_prompt_agent(tmp_path, [{"id": f"c{i}", "input": text, "expected": text}
                                          for i, text in enumerate(inputs)])
    project = {"FARM_AGENTS_ROOT": str(tmp_path / "assistants"), "FARM_CONNECTORS_ROOT": str(tmp_path / "connectors"),
               **env}
    port = free_port()
    argv = [sys.executable, str(EXAMPLE_SERVERS / "openai_server.py"), "--port", str(port), "--seed", str(SEED),
            "--fault-rate", "429=0.1", "--fault-rate", "stall=0.1", "--stall-s", "1"]
    out = tmp_path / "report.json"
    with serve_subprocess(argv, port) as served:
        write_connector(tmp_path, served.url, model="right-0.5", max_tokens=None)
        done = farm_cli.run("test", "-i", str(suite), "--runs", str(RUNS), "--broker", farm_cli.broker, "--queue",
                            "chaos", "--no-history", "--no-progress", "-o", str(out), env=project, timeout=300)
        stats = served.stats()
    assert done.returncode in (0, 1), done.stdout + done.stderr
    report = report_of(out)
    expected = {f"c{i}": chaos.expected_right(SEED, text, 0.5, RUNS) for i, text in enumerate(inputs)}
    assert {c["id"]: (c["runs"], c["passed"]) for c in report["results"]} == {
        case: (RUNS, passes) for case, passes in expected.items()}
    assert all(sorted(d["run"] for d in c["run_details"]) == list(range(1, RUNS + 1)) for c in report["results"])
    faults = stats["faults"]
    assert faults.get("429", 0) > 0 and faults.get("stall", 0) > 0  # the chaos happened
    answered = sum(stats["hits"].values()) - faults.get("429", 0)
    assert answered == report["summary"]["total_runs"] == 4 * RUNS  # one answer per run: none lost or doubled
