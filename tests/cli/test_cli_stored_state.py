"""Issue 27 through the real ``farm`` command: the history database, the journal, distributed sweeps.

A database that is not the farm's is refused, a read creates nothing; a journal's bad lines are
counted; a detached sweep's tags reach the history; runs lost with a killed worker are announced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_cli_clear_errors import AGENTS, assert_one_line_error, farm

# --------------------------------------------------------------------------- the history database


def _markers(redis_client: Any, key: str) -> int:
    """Runs begun in a running hash (its sentinel field is no run's)."""
    from farm.distributed.store.keys import SENTINEL

    return sum(1 for field in redis_client.hkeys(key) if field != SENTINEL)


def test_a_database_of_another_program_is_refused_with_what_it_holds(tmp_path: Path) -> None:
    import sqlite3

    database = tmp_path / "app.sqlite"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    result = farm("history", "--history", f"sqlite:///{database}", cwd=tmp_path)
    assert_one_line_error(result, "not a farm history database", "customers")
    with sqlite3.connect(database) as conn:  # and nothing was added to it
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"customers"}


def test_a_database_of_a_newer_farm_is_refused_and_an_older_one_migrated(tmp_path: Path) -> None:
    import sqlite3

    from alembic import command

    from farm.history.engine import _alembic_config, create_history_engine, migrate
    from farm.history.tables import SCHEMA_REVISION, VERSION_TABLE

    older, newer = tmp_path / "older.sqlite", tmp_path / "newer.sqlite"
    migrate(create_history_engine(f"sqlite:///{newer}"))
    with sqlite3.connect(newer) as conn:
        conn.execute(f"UPDATE {VERSION_TABLE} SET version_num = 'r9999'")
    refused = farm("history", "--history", f"sqlite:///{newer}", cwd=tmp_path)
    assert_one_line_error(refused, "newer agent-farm", "r9999")
    with create_history_engine(f"sqlite:///{older}").begin() as conn:  # an older farm's schema: r0001 only
        config = _alembic_config()
        config.attributes["connection"] = conn
        command.upgrade(config, "r0001")
    migrated = farm("history", "--history", f"sqlite:///{older}", cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    with sqlite3.connect(older) as conn:
        assert conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone()[0] == SCHEMA_REVISION


def test_reading_a_missing_history_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "not" / "yet" / "history.sqlite"
    for command in (["history"], ["baseline", "list"], ["compare", "last", "last"]):
        result = farm(*command, "--history", f"sqlite:///{missing}", cwd=tmp_path)
        assert result.returncode in (0, 2) and "Traceback" not in result.stderr, result.stderr
    assert not (tmp_path / "not").exists()


def test_an_empty_baseline_name_is_refused(tmp_path: Path) -> None:
    result = farm("baseline", "set", "", "last", "--history", f"sqlite:///{tmp_path / 'h.sqlite'}", cwd=tmp_path)
    assert_one_line_error(result, "baseline name is empty")


# --------------------------------------------------------------------------- the journal


def test_bad_lines_in_a_journal_are_counted_and_reported(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (tmp_path / "s.jsonl").write_text("".join(json.dumps({"id": c, "input": c}) + "\n" for c in "abc"))
    ran = farm("test", "--no-progress", "--no-history", "-i", "s.jsonl", "-n", f"py:{AGENTS}:echo", "--runs", "2",
               "-o", "r.json", cwd=tmp_path, env={"FARM_DATA_DIR": str(data)})
    assert ran.returncode == 0, ran.stderr
    [journal] = list(data.rglob("*.jsonl"))
    lines = journal.read_text().splitlines(keepends=True)
    results = [i for i, line in enumerate(lines) if json.loads(line).get("type") == "result"]
    broken = json.loads(lines[results[1]])
    broken["run_result"]["status"] = "no-such-status"
    lines[results[1]] = json.dumps(broken) + "\n"
    lines.insert(results[0] + 1, "{this is not json\n")
    journal.write_text("".join(lines))
    rendered = farm("report", str(journal), "-o", "again.json", cwd=tmp_path, env={"FARM_DATA_DIR": str(data)})
    assert rendered.returncode in (0, 1, 3), rendered.stderr
    assert "2 bad lines skipped" in rendered.stderr and "not JSON" in rendered.stderr, rendered.stderr
    report = json.loads((tmp_path / "again.json").read_text())
    assert report["metadata"]["journal_bad_lines"]["count"] == 2
    assert sum(case["runs"] for case in report["results"]) == 5  # six runs recorded, one line lost


# --------------------------------------------------------------------------- distributed


def test_a_detached_sweeps_tags_are_recorded_when_farm_results_collects_it(tmp_path: Path, farm_worker: Any,
                                                                          farm_cli: Any, counting_agent: Any) -> None:
    suite = tmp_path / "d.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "x"}) + "\n")
    history = f"sqlite:///{tmp_path / 'mine.sqlite'}"  # the submitter's own; the worker has none
    agent = counting_agent(f"{AGENTS}:echo")
    submitted = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "2", "--queue", "tagq",
                             "--detach", "--tag", "env=ci", env={"FARM_HISTORY_URL": history})
    assert submitted.returncode == 0, submitted.stderr
    sweep_id = submitted.stdout.strip()
    assert f"recorded in the history when `farm results {sweep_id}` collects it" in submitted.stderr
    farm_worker(queue="tagq")
    collected = farm_cli.run("results", sweep_id, "-o", str(tmp_path / "r.json"), timeout=120,
                             env={"FARM_HISTORY_URL": history})
    assert collected.returncode == 0, collected.stderr
    assert "(tags env=ci)" in collected.stderr
    agent.assert_once_each(2)
    shown = farm_cli.run("history", "--tag", "env=ci", "--json", env={"FARM_HISTORY_URL": history})
    assert [s["sweep_id"] for s in json.loads(shown.stdout)["sweeps"]] == [sweep_id], shown.stdout


def test_farm_status_says_when_runs_were_lost_with_a_killed_worker(tmp_path: Path, redis_client: Any,
                                                                  farm_worker: Any, farm_cli: Any) -> None:
    import time

    from farm.distributed.store import keys as redis_keys

    suite = tmp_path / "l.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "x"}) + "\n")
    submitted = farm_cli.run("test", "-i", str(suite), "-n", "py:tests/agents/distributed.py:slow", "--runs", "2",
                             "--queue", "lostq", "--detach", "--no-history")
    assert submitted.returncode == 0, submitted.stderr
    sweep_id = submitted.stdout.strip()
    worker = farm_worker(queue="lostq", concurrency=2, env={"FARM_TEST_SLEEP": "600"})
    deadline = time.monotonic() + 120
    while _markers(redis_client, redis_keys.running_key(sweep_id)) < 2:
        assert time.monotonic() < deadline, "the worker never began the runs"
        time.sleep(0.2)
    worker.kill()
    deadline = time.monotonic() + 120  # the dead worker's heartbeat expires within its TTL (at most 10 s)
    while True:
        text = farm_cli.run("status").stdout
        if "2 runs lost with a worker that died" in text:
            break
        assert time.monotonic() < deadline, text
        time.sleep(1)
    assert "published again by" in text
    assert json.loads(farm_cli.run("status", "--json").stdout)["sweeps"][0]["lost_runs"] == 2
    farm_cli.run("cancel", sweep_id)


def test_the_attached_submitter_says_when_runs_were_lost_with_a_killed_worker(tmp_path: Path, redis_client: Any,
                                                                             farm_worker: Any, farm_cli: Any) -> None:
    import signal
    import threading
    import time

    from farm.distributed.store import keys as redis_keys
    from tests.support.waiting import wait_for

    suite = tmp_path / "l.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "x"}) + "\n")
    worker = farm_worker(queue="lostq2", concurrency=2, env={"FARM_TEST_SLEEP": "600"})
    submitter = farm_cli.popen("test", "--no-progress", "--no-history", "-i", str(suite), "-n",
                               "py:tests/agents/distributed.py:slow", "--runs", "2", "--queue", "lostq2",
                               "-o", str(tmp_path / "r.json"))
    said: list[str] = []  # the submitter's stderr as it comes, read while it runs
    reader = threading.Thread(target=lambda: said.extend(iter(submitter.stderr.readline, "")), daemon=True)
    reader.start()
    threading.Thread(target=submitter.stdout.read, daemon=True).start()  # drained, so it never blocks on it
    told = "2 runs lost with a worker that died: published again by"
    try:
        deadline = time.monotonic() + 120
        while not any(_markers(redis_client, k) >= 2 for k in redis_client.scan_iter(redis_keys.running_key("*"))):
            assert time.monotonic() < deadline and submitter.poll() is None, "the worker never began the runs"
            time.sleep(0.2)
        worker.kill()
        deadline = time.monotonic() + 120
        while "lost with a worker" not in farm_cli.run("status").stdout:  # the dead worker's heartbeat expired
            assert time.monotonic() < deadline
            time.sleep(1)
        # then the submitter's worker check (every WORKER_CHECK_S = 5 s) tells it: waited for, not slept
        wait_for(lambda: told in "".join(said) or submitter.poll() is not None, 120, "the submitter to say so")
    finally:
        submitter.send_signal(signal.SIGINT)
        submitter.send_signal(signal.SIGINT)
        submitter.wait(timeout=120)
        reader.join(timeout=30)
    stderr = "".join(said)
    assert told in stderr, stderr
