"""What a user of a distributed sweep sees: its id as it starts, Flower's columns, a worker that
cannot build the agent reported as a configuration error (exit 2), not as failed cases.

Real ``redis-server``, real ``farm worker`` subprocesses and the real CLI (SPEC 10).
"""

from __future__ import annotations

import json

import pytest

from farm.cli.sweeps import FLOWER_TASK_COLUMNS, flower_command
from farm.models import RunResult, RunStatus
from tests.support.distributed_sweeps import write_suite


def test_flower_lists_task_arguments_and_results_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_FLOWER_USER", "admin")
    monkeypatch.setenv("FARM_FLOWER_PASSWORD", "secret")
    argv, _env = flower_command("redis://localhost:6379/0", 5555, "127.0.0.1", 100, [])
    assert f"--tasks_columns={FLOWER_TASK_COLUMNS}" in argv
    assert {"args", "result"} <= set(FLOWER_TASK_COLUMNS.split(","))
    argv, _env = flower_command("redis://localhost:6379/0", 5555, "127.0.0.1", 100, ["--tasks_columns=name"])
    assert [a for a in argv if a.startswith("--tasks_columns")] == ["--tasks_columns=name"]  # the user's wins


def test_a_failed_run_task_leads_its_result_with_the_status() -> None:
    from workers.runs import _summary

    failed = RunResult(case_id="c", run=2, status=RunStatus.FAILED, sweep_id="s-1", output="no")
    record = _summary(failed, counted=True)
    assert next(iter(record)) == "status" and record["status"] == "failed"
    assert repr(record).startswith("{'status': 'failed'")  # what Flower's result column shows first


@pytest.mark.redis
@pytest.mark.slow
def test_a_distributed_sweep_prints_its_id_and_flower_address_as_it_starts(tmp_path, redis_client, farm_worker,
                                                                          farm_cli, counting_agent):
    farm_worker(queue="face")
    suite = write_suite(tmp_path / "s.jsonl", [{"id": "a", "input": "x"}])
    agent = counting_agent()
    done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--queue", "face", "-o",
                        str(tmp_path / "r.json"), "--broker", farm_cli.broker,
                        env={"FARM_FLOWER_URL": "http://flower.example:5555/"})
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    sweep_id = report["metadata"]["sweep_id"]
    agent.assert_once_each(report["summary"]["total_runs"])
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"sweep {sweep_id} on redis://127.0.0.1:") and f"farm results {sweep_id}" in first
    assert f"flower: http://flower.example:5555/tasks (search {sweep_id})" in done.stderr


@pytest.mark.redis
@pytest.mark.slow
def test_a_worker_logs_no_line_per_run_unless_asked(tmp_path, redis_client, farm_worker, farm_cli, counting_agent):
    """Issue 16: Celery's "received" / "succeeded in" INFO lines cost CPU per run; the farm's own
    lines (ready, warnings) stay. ``--log-runs`` brings them back."""
    quiet = farm_worker(queue="quiet-log")
    loud = farm_worker("--log-runs", queue="loud-log")
    suite = write_suite(tmp_path / "s.jsonl", [{"id": "a", "input": "x"}])
    agent = counting_agent()
    for queue in ("quiet-log", "loud-log"):
        done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "3", "--queue", queue,
                            "--broker", farm_cli.broker, "--no-progress")
        assert done.returncode == 0, done.stderr
        agent.assert_once_each(3)
        agent.clear()
    assert " ready." in quiet.text() and "farm.run[" not in quiet.text()
    assert loud.text().count("farm.run[") >= 6  # received and succeeded, three runs


@pytest.mark.redis
@pytest.mark.slow
def test_an_agent_a_worker_cannot_build_is_a_configuration_error(tmp_path, redis_client, farm_worker, farm_cli):
    """The submitter has the connector's key, the worker does not: exit 2 with the worker's message."""
    agent = tmp_path / "assistants" / "keyed"
    agent.mkdir(parents=True)
    (agent / "package.yao").write_text('{"connector": "local.keyed"}')
    (agent / "prompts.yml").write_text("- role: system\n  content: Answer briefly.\n")
    connector = tmp_path / "connectors" / "local" / "keyed.conn.yao"
    connector.parent.mkdir(parents=True)
    connector.write_text(json.dumps({"type": "openai", "options": {
        "model": "m", "host": "http://127.0.0.1:9/v1", "key": "$ENV.FARM_FACE_TEST_KEY"}}))
    suite = write_suite(agent / "tests.jsonl", [{"id": f"c{i}", "input": "x"} for i in range(5)])
    farm_worker(queue="keyless")  # started without FARM_FACE_TEST_KEY
    done = farm_cli.run("test", "-i", str(suite), "--runs", "3", "--queue", "keyless", "-o", str(tmp_path / "r.json"),
                        "--broker", farm_cli.broker, env={"FARM_FACE_TEST_KEY": "sk-only-on-the-submitter",
                                                          "FARM_CONNECTORS_ROOT": str(connector.parent.parent)})
    assert done.returncode == 2, done.stderr
    assert "cannot build agent 'keyed' on worker" in done.stderr
    assert "environment variable FARM_FACE_TEST_KEY is not set" in done.stderr
    assert "sk-only-on-the-submitter" not in done.stderr
    assert not (tmp_path / "r.json").exists()  # no report that reads as 15 failed runs
