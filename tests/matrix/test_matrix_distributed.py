"""Matrix sweeps on real ``farm worker`` processes and a private Redis (SPEC 22, issue 41): the arms'
runs are ordinary tasks, published interleaved in the in-process order, and the report (attached,
or ``--detach`` and ``farm results``) equals the in-process one but for timings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.matrix.test_matrix import ARMS, _arm, _suite

TIMING = ("p50_latency_ms", "p95_latency_ms")


def _comparable(path: Path) -> dict[str, Any]:
    """What must match between executors: every count, verdict, interval, cost and token, the cost
    front; not timings."""
    report = json.loads(path.read_text())
    arms = [{**arm, "summary": {k: v for k, v in arm["summary"].items() if k not in TIMING}} for arm in report["arms"]]
    results = [(r["id"], r["arm"], r["runs"], r["passed"], r["pass_rate_ci"], r["cost_usd"], r["usage"],
                r["case_passed"], r["content_hash"]) for r in report["results"]]
    matrix = {k: v for k, v in report["matrix"].items() if k != "pareto_latency"}  # the front of timings
    return {"arms": arms, "matrix": matrix, "results": results, "summary": report["summary"]["total_runs"]}


def test_distributed_matrix_report_equals_the_in_process_one(tmp_path: Path, farm_worker: Any, farm_cli: Any) -> None:
    suite = _suite(tmp_path, 4)
    matrix = tmp_path / "m.toml"  # an arm's options travel with its cases to the workers
    matrix.write_text(f'[[arm]]\nname = "mid"\nagent = "py:{ARMS}:by_option"\noptions = {{ p = 0.7, cost = 2 }}\n')
    arms = ("--arm", _arm("good", "p95"), "--arm", _arm("bad", "p20"), "--matrix", str(matrix), "--seed", "3")
    common = ("test", "-i", str(suite), *arms, "--runs", "12", "--no-progress", "--no-history")
    local_log, remote_log = tmp_path / "local.log", tmp_path / "remote.log"
    local = farm_cli.run(*common, "--parallel", "1", "-o", str(tmp_path / "local.json"),
                         env={"MATRIX_CALL_LOG": str(local_log)}, local=True)
    assert local.returncode == 1, local.stderr
    farm_worker(queue="matrix", concurrency=1, env={"MATRIX_CALL_LOG": str(remote_log)})
    remote = farm_cli.run(*common, "-o", str(tmp_path / "remote.json"), "--broker", farm_cli.broker,
                          "--queue", "matrix", timeout=180)
    assert remote.returncode == 1, remote.stderr
    assert _comparable(tmp_path / "remote.json") == _comparable(tmp_path / "local.json")
    expected = _comparable(tmp_path / "local.json")
    assert {c["verdict"] for c in expected["matrix"]["cells"] if c["arm"] == "bad"} == {"worse"}
    assert [a["summary"]["cost_usd"] for a in expected["arms"]] == [0.048, 0.048, 0.096]  # mid's option: $0.002 a run
    # one worker taking one run at a time: the runs were published (and made) in the interleaved order
    assert remote_log.read_text().splitlines() == local_log.read_text().splitlines()

    submitted = farm_cli.run(*common, "--broker", farm_cli.broker, "--queue", "matrix", "--detach")
    assert submitted.returncode == 0, submitted.stderr
    sweep_id = submitted.stdout.strip()
    collected = farm_cli.run("results", sweep_id, "-o", str(tmp_path / "detached.json"), "-o",
                             str(tmp_path / "detached.xml"), timeout=180)
    assert collected.returncode == 1, collected.stderr
    assert _comparable(tmp_path / "detached.json") == _comparable(tmp_path / "local.json")
    assert (tmp_path / "detached.xml").read_text().count("<testsuite ") == 3
    assert "good (baseline)" in collected.stderr
