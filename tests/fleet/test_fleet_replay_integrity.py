"""Replay checks each recording (SPEC 15): a file that is not the call's recording (another call's
copied over it, edited, of another version, without a value, truncated, deleted) is an error run of
class ``harness:replay`` naming the file, never a silent verdict; ``--replay`` needs no secret."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from farm.fleet.replay import ReplayStore
from farm.plan.fleet import ReplayMode
from tests.fleet.test_fleet_replay import judged_case, sweep, verdicts
from tests.support.fleet_project import KEY, calls, llm_server, report_of, write_connector, write_prompt_agent
from tests.support.servers import json_agent_server, openai_server


def _agent_files(root: Path) -> list[Path]:
    """The agent recordings of runs 1, 2, 3 (turn 1), found by their stored key."""
    found = {}
    for path in (root / "agent").rglob("*.json"):
        key = json.loads(path.read_text())["key"]
        found[(key["run"], key["turn"])] = path
    return [found[(run, 1)] for run in (1, 2, 3)]


def _swap(files: list[Path]) -> None:
    shutil.copyfile(files[1], files[0])  # run 2's answer served as run 1's


def _edit(files: list[Path]) -> None:
    data = json.loads(files[0].read_text())
    data["value"]["text"] = "something else"
    files[0].write_text(json.dumps(data))


def _version(files: list[Path]) -> None:
    data = json.loads(files[0].read_text())
    data["version"] = 999
    files[0].write_text(json.dumps(data))


def _no_value(files: list[Path]) -> None:
    data = json.loads(files[0].read_text())
    del data["value"]
    files[0].write_text(json.dumps(data))


def _truncate(files: list[Path]) -> None:
    files[0].write_text(files[0].read_text()[:40])


def _delete(files: list[Path]) -> None:
    files[0].unlink()


TAMPERS: dict[str, Callable[[list[Path]], None]] = {
    "swap": _swap, "edit": _edit, "version": _version, "missing value": _no_value, "truncated": _truncate,
    "deleted": _delete,
}


@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_each_tampered_recording_is_a_replay_error_naming_the_file(tamper: str, tmp_path: Path) -> None:
    case = judged_case("tamper")
    with json_agent_server() as agent_server, openai_server() as judge_server:
        urls = (agent_server.url + "/echo", judge_server.url)
        recorded = sweep(ReplayStore.open(tmp_path, ReplayMode.RECORD), *urls, case)
    files = _agent_files(tmp_path)
    TAMPERS[tamper](files)
    replayed = sweep(ReplayStore.open(tmp_path, ReplayMode.REPLAY), *urls, case)  # the servers are gone
    first = replayed[0]
    assert first.status == "error" and first.error is not None, first
    assert first.failure_class == "harness:replay"
    assert str(files[0]) in first.error.message
    assert verdicts(replayed[1:]) == verdicts(recorded[1:])  # the untouched runs replay as recorded


@pytest.mark.redis
@pytest.mark.slow
def test_replay_on_workers_needs_no_key_and_a_swapped_recording_changes_no_verdict(
        tmp_path: Path, redis_client, farm_worker, farm_cli) -> None:
    farm_worker(queue="replay", concurrency=2)  # no FARM_TEST_OPENAI_KEY on the worker
    project = {"FARM_AGENTS_ROOT": str(tmp_path / "assistants"), "FARM_CONNECTORS_ROOT": str(tmp_path / "connectors")}
    suite = write_prompt_agent(tmp_path, [{"id": "kw", "input": "Replays hold", "assert": {
        "type": "contains", "value": "Replays"}}])
    record, recorded, replayed = tmp_path / "calls", tmp_path / "recorded.json", tmp_path / "replayed.json"
    with llm_server() as llm:
        write_connector(tmp_path, llm.url)
        done = farm_cli.run("test", "-i", str(suite), "--runs", "3", "--record", str(record), "-o", str(recorded),
                            "--no-history", "--no-progress", env={**project, "FARM_TEST_OPENAI_KEY": KEY}, local=True)
        assert done.returncode in (0, 1), done.stderr
        before = calls(llm)
        distributed = ("--broker", farm_cli.broker, "--queue", "replay", "--no-history", "--no-progress")
        done = farm_cli.run("test", "-i", str(suite), "--runs", "3", "--replay", str(record), "-o", str(replayed),
                            *distributed, env=project)
        assert done.returncode in (0, 1), done.stderr
        assert calls(llm) == before
        outputs = [sorted((d["run"], str(d["output"]), d["status"])
                          for d in report_of(path)["results"][0]["run_details"]) for path in (recorded, replayed)]
        assert outputs[0] == outputs[1] and len(outputs[0]) == 3
        files = _agent_files(record)
        _swap(files)
        done = farm_cli.run("test", "-i", str(suite), "--runs", "3", "--replay", str(record), "-o", str(replayed),
                            *distributed, env=project)
        assert calls(llm) == before
    details = {d["run"]: d for d in report_of(replayed)["results"][0]["run_details"]}
    assert details[1]["status"] == "error" and details[1]["failure_class"] == "harness:replay"
    assert str(files[0]) in details[1]["error"]
    assert [details[run]["status"] for run in (2, 3)] == [d[2] for d in outputs[0][1:]]


