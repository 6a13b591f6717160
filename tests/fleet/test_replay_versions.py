"""Issue 37 item 7: a recording of format version 1 carries no checksum, so one edited to pass
cannot be told from a genuine one. ``--replay`` refuses such a directory before any run (exit 2,
"re-record"); a version-1 file met while replaying is an error run, never a silent verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.fleet.replay import ReplayStore
from farm.plan.fleet import ReplayMode
from tests.cli.test_cli_clear_errors import AGENTS, farm
from tests.fleet.test_fleet_replay import judged_case, sweep
from tests.fleet.test_fleet_replay_integrity import _agent_files
from tests.support.servers import json_agent_server, openai_server


def _downgrade_to_pass(path: Path, text: str) -> None:
    """What the red team did: the answer edited to pass, ``"version": 1``, the checksum removed."""
    data = json.loads(path.read_text())
    data["value"]["text"] = text
    data["version"] = 1
    del data["checksum"]
    path.write_text(json.dumps(data, indent=1))


@pytest.mark.slow  # starts a farm process, a server or an agent program
def test_a_recording_edited_to_pass_and_marked_version_1_is_refused_saying_re_record(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text(json.dumps({"id": "a", "input": "x",
                                                  "assert": {"type": "contains", "value": "never-there"}}) + "\n")
    common = ("test", "--no-history", "--no-progress", "-i", "s.jsonl", "-n", f"py:{AGENTS}:text", "--runs", "4")
    recorded = farm(*common, "--record", "rec", cwd=tmp_path)
    assert recorded.returncode == 1, recorded.stderr  # the truth: 0 of 4 pass
    files = sorted((tmp_path / "rec").rglob("*.json"))
    assert len(files) == 4
    for path in files[:2]:
        _downgrade_to_pass(path, "never-there")
    replayed = farm(*common, "--replay", "rec", "-o", "r.json", cwd=tmp_path)
    assert replayed.returncode == 2, (replayed.returncode, replayed.stderr)
    assert "format version 1 has no checksum" in replayed.stderr and "re-record" in replayed.stderr
    assert "and 1 more" in replayed.stderr and "Traceback" not in replayed.stderr
    assert not (tmp_path / "r.json").exists()  # nothing ran


def test_a_version_1_file_met_while_replaying_is_an_error_run_saying_re_record(tmp_path: Path) -> None:
    case = judged_case("downgraded")
    with json_agent_server() as agent_server, openai_server() as judge_server:
        urls = (agent_server.url + "/echo", judge_server.url)
        sweep(ReplayStore.open(tmp_path, ReplayMode.RECORD), *urls, case)
    store = ReplayStore.open(tmp_path, ReplayMode.REPLAY)  # the directory was clean when replay started
    first = _agent_files(tmp_path)[0]
    _downgrade_to_pass(first, "hello downgraded")
    replayed = sweep(store, *urls, case)
    assert replayed[0].status == "error" and replayed[0].error is not None
    assert replayed[0].failure_class == "harness:replay"
    assert str(first) in replayed[0].error.message and "re-record" in replayed[0].error.message
