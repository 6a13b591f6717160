"""The run journal and ``farm report``: every completed run on disk, any format rendered from it.

Through the real CLI: ``farm test`` writes a journal whatever ``-o`` says; ``farm report``
renders a complete journal to the same report ``-o`` wrote, a partial one (cut mid-line, as a
kill leaves it) to a report of the runs it holds, and a distributed sweep (live or finished)
from the broker's store.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from farm.cli import main
from farm.sweep.journal import journal_dir, prune_journals
from farm.sweep.kept import index_path
from tests.support.servers import ROOT

AGENTS = ROOT / "tests" / "agents" / "basic.py"


def agent(name: str) -> str:
    return f"py:{AGENTS}:{name}"


def farm(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def suite(tmp_path: Path, *cases: dict) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


def journals(data_dir: Path) -> list[Path]:
    return sorted(journal_dir(data_dir).glob("*.jsonl"))


FLAKY = [{"id": "f", "input": "x", "expected": "yes"}, {"id": "g", "input": "y", "expected": "yes"},
         {"id": "skipped", "input": "z", "skip": True}]


def test_every_sweep_is_journaled_whatever_the_output(tmp_path: Path, farm_data_dir: Path) -> None:
    result = farm("test", "--no-progress", "-m", "hello", "-n", agent("text"))  # stdout only: no -o at all
    assert result.exit_code == 0 and result.stdout.strip() == "you said: hello"
    [journal] = journals(farm_data_dir)
    kinds = [json.loads(line)["type"] for line in journal.read_text().splitlines()]
    assert kinds == ["start", "plan", "result", "stability", "summary"]
    run = json.loads(journal.read_text().splitlines()[2])
    assert run["id"] == "message" and run["output"] == "you said: hello"  # Yao's fields, for people and jq
    assert run["run_result"]["output"] == "you said: hello"  # the full run, for farm report


def test_report_from_a_complete_journal_equals_the_sweeps_own(tmp_path: Path, farm_data_dir: Path) -> None:
    out = tmp_path / "live.json"
    assert farm("test", "--no-progress", "-i", str(suite(tmp_path, *FLAKY)), "-n", agent("flaky"), "--runs", "4",
                "-o", str(out)).exit_code == 1
    [journal] = journals(farm_data_dir)
    sweep_id = journal.stem
    again = tmp_path / "again.json"
    result = farm("report", sweep_id, "-o", str(again), "-o", str(tmp_path / "again.xml"))  # by sweep id
    assert result.exit_code == 1, result.output  # the verdict's exit code, as farm test gave
    live, rebuilt = json.loads(out.read_text()), json.loads(again.read_text())
    assert rebuilt["results"] == live["results"]
    assert rebuilt["summary"] == live["summary"] and rebuilt["metadata"] == live["metadata"]
    assert live["summary"]["skipped_ids"] == ["skipped"]
    assert "<testsuites" in (tmp_path / "again.xml").read_text()


def test_report_renders_a_partial_journal(tmp_path: Path, farm_data_dir: Path) -> None:
    # --parallel 1: the journal's run order is the plan's, so "five runs in" is f's four and g's first
    assert farm("test", "--no-progress", "-i", str(suite(tmp_path, *FLAKY)), "-n", agent("flaky"), "--runs", "4",
                "--parallel", "1", "-o", str(tmp_path / "o.jsonl")).exit_code == 1
    [journal] = journals(farm_data_dir)
    lines = journal.read_text().splitlines(keepends=True)
    results = [i for i, line in enumerate(lines) if '"type": "result"' in line]
    cut = tmp_path / "cut.jsonl"  # five runs in, the sixth half written: what a kill leaves behind
    cut.write_text("".join(lines[: results[4] + 1]) + lines[results[5]][:40])
    for fmt in ("json", "md", "html", "xml", "jsonl"):
        result = farm("report", str(cut), "-o", str(tmp_path / f"partial.{fmt}"))
        assert result.exit_code == 3, result.output  # partial: never green
    report = json.loads((tmp_path / "partial.json").read_text())
    assert report["metadata"]["status"] == "abandoned" and "journal ends" in report["metadata"]["reason"]
    assert {r["id"]: (r["runs"], r["runs_planned"]) for r in report["results"]} == {"f": (4, 4), "g": (1, 4)}
    assert report["metadata"]["not_run"] == ["skipped"]  # its one (skipped) run was not reached
    assert "g" in (tmp_path / "partial.html").read_text()


@pytest.mark.parametrize(("source", "needle"), [
    ("no/such/journal.jsonl", "no/such/journal.jsonl: no such file"),
    (str(ROOT / "README.md"), "not a farm run journal (no plan line; line 1: not JSON"),
    ("SUITE", "not a farm run journal"),  # JSON lines, but a suite
])
def test_report_of_something_else_is_an_input_error(tmp_path: Path, source: str, needle: str) -> None:
    if source == "SUITE":
        source = str(suite(tmp_path, {"id": "a", "input": "x"}))
    result = farm("report", source, "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 2 and needle in result.stderr
    assert not (tmp_path / "r.json").exists()


def test_report_needs_an_output(tmp_path: Path) -> None:
    result = farm("report", "whatever")
    assert result.exit_code == 2 and "-o" in result.stderr


def test_old_journals_are_pruned_when_a_sweep_starts(tmp_path: Path, farm_data_dir: Path) -> None:
    directory = journal_dir(farm_data_dir)
    directory.mkdir(parents=True)
    old, recent = directory / "old.jsonl", directory / "recent.jsonl"
    for path, age_days in ((old, 8), (recent, 6)):
        path.write_text("{}\n")
        index_path(path).write_text("{}\n")  # a finished journal's index goes with it
        stamp = time.time() - age_days * 86400
        os.utime(path, (stamp, stamp))
    assert farm("test", "--no-progress", "-m", "hi", "-n", agent("text")).exit_code == 0
    left = {p.name for p in journals(farm_data_dir)}
    assert "old.jsonl" not in left and "recent.jsonl" in left and len(left) == 2
    assert not index_path(old).exists() and index_path(recent).exists()
    assert prune_journals(farm_data_dir, 5) == [recent]  # FARM_JOURNAL_DAYS=5 would take it too


def test_an_unwritable_data_dir_is_a_settings_error_before_any_run(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = farm("test", "--no-progress", "-i", str(suite(tmp_path, {"id": "a", "input": "x"})), "-n",
                  agent("echo"), env={"FARM_DATA_DIR": str(blocker), "FARM_TEST_CALLS": str(calls)})
    assert result.exit_code == 2 and "FARM_DATA_DIR" in result.stderr
    assert not calls.exists()


@pytest.mark.redis
def test_report_of_a_distributed_sweep_live_and_finished(tmp_path: Path, redis_client, farm_worker, farm_cli,
                                                         counting_agent) -> None:
    cases = suite(tmp_path, {"id": "a", "input": "x"}, {"id": "b", "input": "y"})
    agent = counting_agent()
    detached = farm_cli.run("test", "-i", str(cases), "-n", agent.ref, "--runs", "2", "--queue",
                            "nobody-listens", "--detach")
    assert detached.returncode == 0, detached.stderr
    sweep_id = detached.stdout.strip()
    live = farm_cli.run("report", sweep_id, "-o", str(tmp_path / "live.json"))
    assert live.returncode == 3, live.stderr  # in flight: a snapshot, never green
    snapshot = json.loads((tmp_path / "live.json").read_text())
    assert snapshot["metadata"]["status"] == "running" and snapshot["metadata"]["not_run"] == ["a", "b"]
    farm_worker(queue="nobody-listens")
    done = farm_cli.run("results", sweep_id, "-o", str(tmp_path / "done.json"))
    assert done.returncode == 0, done.stderr
    final = farm_cli.run("report", sweep_id, "-o", str(tmp_path / "final.json"), "-o", str(tmp_path / "final.md"))
    assert final.returncode == 0, final.stderr
    report = json.loads((tmp_path / "final.json").read_text())
    assert report["metadata"]["status"] == "complete" and [r["id"] for r in report["results"]] == ["a", "b"]
    assert report["results"] == json.loads((tmp_path / "done.json").read_text())["results"]
    agent.assert_once_each(4)  # `farm report` of the sweep, live and finished, called nothing


def test_report_of_an_unknown_sweep_without_a_broker_says_where_it_looked(tmp_path: Path, farm_data_dir: Path) -> None:
    result = farm("report", "20990101T000000-abcdef", "-o", str(tmp_path / "r.json"), "--broker", "redis://127.0.0.1:1/0")
    assert result.exit_code == 2
    assert f"no journal of that sweep in {journal_dir(farm_data_dir)}" in result.stderr
    assert "no broker to ask" in result.stderr
