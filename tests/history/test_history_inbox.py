"""The history's inbox (``farm.history.inbox``): ``farm test`` leaves its sweep beside a SQLite history,
every reader records it first. Real ``farm`` subprocesses on real SQLite files (a PostgreSQL
history is recorded directly)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, func, select

from farm.agents.secrets import register_secret
from farm.history.inbox import deposit, inbox_of
from farm.history.store import HistoryStore
from farm.history.tables import case_criteria, case_results, comparisons, sweep_tags, sweeps
from farm.view.data import SweepFilter, ViewData
from tests.support.browser_fixtures import make_report
from tests.support.servers import ROOT

AGENT = f"py:{ROOT / 'tests' / 'agents' / 'quality.py'}:quality"


def farm(data: Path, *args: str, quality: float = 1.0, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m farm ARGS`` with ``data`` as FARM_DATA_DIR (the default history lives there)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FARM_")}
    env.update(PYTHONPATH=str(ROOT), FARM_DATA_DIR=str(data), FARM_TEST_QUALITY=str(quality))
    return subprocess.run([sys.executable, "-m", "farm", *args], cwd=cwd or data.parent, env=env, text=True,
                          capture_output=True, timeout=300, check=False)


def sweep(data: Path, *extra: str, quality: float = 1.0, runs: int = 3) -> str:
    """A ``farm test`` of two cases; its sweep id."""
    suite = data.parent / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": c, "input": c, "expected": "yes"}) + "\n" for c in ("a", "b")))
    out = data.parent / "r.json"
    done = farm(data, "test", "--no-progress", "-i", str(suite), "-n", AGENT, "--runs", str(runs), "-o", str(out),
                *extra, quality=quality)
    assert done.returncode in (0, 1), done.stderr
    return str(json.loads(out.read_text())["metadata"]["sweep_id"])


def listed(data: Path) -> tuple[list[str], str]:
    """The sweep ids ``farm history --json`` lists (oldest first), and what it said on stderr."""
    done = farm(data, "history", "--json")
    assert done.returncode == 0, done.stderr
    return [s["sweep_id"] for s in json.loads(done.stdout)["sweeps"]], done.stderr


def entries(data: Path) -> list[str]:
    inbox = data / "history.sqlite.inbox"
    return sorted(p.name for p in inbox.iterdir()) if inbox.is_dir() else []


# ------------------------------------------------------------------------------------ every reader sees it


def test_a_sweep_left_in_the_inbox_is_listed_shown_and_viewed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = sweep(data, "--tag", "kind=ci")
    assert entries(data) == [f"{first}.json"] and not (data / "history.sqlite").exists()  # nothing opened
    ids, said = listed(data)
    assert ids == [first] and said == ""
    assert entries(data) == [] and (data / "history.sqlite").is_file()  # recorded by the reader, then removed
    shown = farm(data, "history", "--case", "a", "--tag", "kind=ci")
    assert shown.returncode == 0 and first in shown.stdout, shown.stdout + shown.stderr
    second = sweep(data, quality=0.0)
    assert entries(data) == [f"{second}.json"]
    view = ViewData(f"sqlite:///{data / 'history.sqlite'}")
    assert [s.sweep_id for s in view.sweeps(SweepFilter())] == [second, first]
    assert entries(data) == []
    compared = farm(data, "compare", "last~1", "last")
    assert compared.returncode == 1 and "2 regressed" in compared.stdout, compared.stdout + compared.stderr


def test_a_given_sqlite_history_has_its_inbox_beside_it(tmp_path: Path) -> None:
    data, database = tmp_path / "data", tmp_path / "team" / "h.db"
    url = f"sqlite:///{database}"
    first = sweep(data, "--history", url)
    assert sorted(p.name for p in (tmp_path / "team" / "h.db.inbox").iterdir()) == [f"{first}.json"]
    assert not database.exists() and not (data / "history.sqlite.inbox").exists()
    quarantine = farm(data, "quarantine", "suggest", "--history", url, "--json")  # a reader that checks for the file
    assert quarantine.returncode == 0, quarantine.stderr
    assert database.is_file() and not list((tmp_path / "team" / "h.db.inbox").iterdir())


def test_two_readers_at_once_record_each_sweep_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    one = sweep(data)
    inbox = data / "history.sqlite.inbox"
    document = json.loads((inbox / f"{one}.json").read_text())
    ids = [one] + [f"{one[:-6]}{i:06x}" for i in range(1, 40)]
    for sweep_id in ids[1:]:
        document["metadata"]["sweep_id"] = sweep_id
        (inbox / f"{sweep_id}.json").write_text(json.dumps(document))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FARM_DATA_DIR": str(data)}
    readers = [subprocess.Popen([sys.executable, "-m", "farm", "history", "--json", "--last", "100"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    said = [reader.communicate(timeout=300) for reader in readers]
    assert [reader.returncode for reader in readers] == [0, 0, 0], said
    assert all(err == "" for _, err in said), said
    assert all(len(json.loads(out)["sweeps"]) == len(ids) for out, _ in said)  # each saw every sweep
    assert entries(data) == []
    with sqlite3.connect(data / "history.sqlite") as db:
        assert sorted(r[0] for r in db.execute("SELECT sweep_id FROM farm_sweeps")) == sorted(ids)
        assert db.execute("SELECT count(*) FROM farm_case_results").fetchone()[0] == 2 * len(ids)


# ------------------------------------------------------------------------------------ failures


def test_an_entry_that_is_not_a_report_is_moved_aside_with_a_warning(tmp_path: Path) -> None:
    data = tmp_path / "data"
    good = sweep(data)
    inbox = data / "history.sqlite.inbox"
    (inbox / "20261128T000000-aaaaaa.json").write_text('{"summary": ')  # cut short
    (inbox / "20261128T000000-bbbbbb.json").write_text('{"hello": 1}')
    ids, said = listed(data)
    assert ids == [good]
    lines = said.splitlines()
    assert len(lines) == 2, said
    for name in ("20261128T000000-aaaaaa.json", "20261128T000000-bbbbbb.json"):
        assert any(line.startswith(f"farm: warning: history: {inbox / name} is not a sweep report (")
                   and line.endswith(f"); moved aside to {name}.bad") for line in lines), said
    assert entries(data) == ["20261128T000000-aaaaaa.json.bad", "20261128T000000-bbbbbb.json.bad"]
    assert listed(data) == ([good], "")  # never read again


def test_a_temporary_entry_a_killed_write_left_is_removed_once_stale(tmp_path: Path) -> None:
    """A ``farm test`` killed between writing its entry and renaming it left ``.NAME.PID.tmp`` for good;
    the next reader removes it once it is an hour old (a write in progress is milliseconds old)."""
    data = tmp_path / "data"
    good = sweep(data)
    inbox = data / "history.sqlite.inbox"
    stale, fresh = inbox / f".{good[:-1]}x.json.41.tmp", inbox / f".{good[:-1]}y.json.42.tmp"
    for temporary in (stale, fresh):
        temporary.write_text('{"summary": ')
    hours_ago = stale.stat().st_mtime - 3 * 3600
    os.utime(stale, (hours_ago, hours_ago))
    assert listed(data) == ([good], "")
    assert entries(data) == [fresh.name]  # the recent one may be a write in progress: kept


def test_a_database_that_refuses_the_sweep_leaves_it_for_the_next_reader(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = sweep(data)
    assert listed(data)[0] == [first]
    with sqlite3.connect(data / "history.sqlite") as db:  # a write the database refuses, as a full disk would
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON farm_sweeps BEGIN SELECT RAISE(ABORT, 'no room'); END")
    second = sweep(data)
    ids, said = listed(data)
    assert ids == [first] and entries(data) == [f"{second}.json"]
    inbox = data / "history.sqlite.inbox"
    assert said == (f"farm: warning: history: 1 finished sweep in {inbox} not recorded yet "
                    "(IntegrityError: no room); kept for the next reader\n")
    with sqlite3.connect(data / "history.sqlite") as db:
        db.execute("DROP TRIGGER refuse")
    assert listed(data) == ([first, second], "") and entries(data) == []


def test_an_inbox_that_cannot_be_written_is_only_a_warning(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "history.sqlite.inbox").write_text("in the way")
    suite = tmp_path / "suite.jsonl"
    suite.write_text('{"id": "a", "input": "a", "expected": "yes"}\n')
    done = farm(data, "test", "--no-progress", "-i", str(suite), "-n", AGENT, "-o", str(tmp_path / "r.json"))
    assert done.returncode == 0 and (tmp_path / "r.json").is_file()
    assert f"farm: warning: history not recorded in sqlite:///{data / 'history.sqlite'}: cannot write " in done.stderr
    assert listed(data) == ([], "")


# ------------------------------------------------------------------------------------ recorded directly


def test_a_baseline_records_directly_and_gates_as_before(tmp_path: Path) -> None:
    data = tmp_path / "data"
    base = sweep(data, runs=20)  # left in the inbox
    suite = data.parent / "suite.jsonl"
    done = farm(data, "test", "--no-progress", "-i", str(suite), "-n", AGENT, "--runs", "20", "--baseline", "last",
                quality=0.3)
    assert done.returncode == 1, done.stderr  # regressed against the inbox's sweep
    assert f"compared with last ({base}): 2 regressed" in done.stderr
    assert entries(data) == []  # the baseline's reader took the inbox; the sweep itself was recorded directly
    engine = create_engine(f"sqlite:///{data / 'history.sqlite'}")
    try:
        with engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(sweeps)).scalar() == 2
            assert conn.execute(select(comparisons.c.kind, comparisons.c.regressed)).all() == [("baseline:last", 2)]
    finally:
        engine.dispose()
    same = farm(data, "test", "--no-progress", "-i", str(suite), "-n", AGENT, "--runs", "20", "--baseline", base)
    assert same.returncode == 0, same.stderr


def test_a_postgresql_history_is_recorded_directly(tmp_path: Path, postgres_database: str) -> None:
    data = tmp_path / "data"
    try:
        sweep(data, "--history", postgres_database)
        assert not data.joinpath("history.sqlite.inbox").exists()
        engine = create_engine(postgres_database)
        try:
            with engine.connect() as conn:
                assert conn.execute(select(func.count()).select_from(sweeps)).scalar() == 1
        finally:
            engine.dispose()
    finally:
        from tests.support.history_fixtures import _drop_farm_tables

        _drop_farm_tables(postgres_database)


# ------------------------------------------------------------------------------------ what an entry holds


def _rows(url: str) -> list[Any]:
    """Every row the history holds of its sweeps, less its own ids and the time of recording."""
    engine = create_engine(url)
    found: list[Any] = []
    try:
        with engine.connect() as conn:
            for table in (sweeps, sweep_tags, case_results, case_criteria):
                columns = [c for c in table.c if c.name not in ("id", "sweep", "recorded_at")]
                found.append(sorted(map(tuple, conn.execute(select(*columns)).all()), key=repr))
    finally:
        engine.dispose()
    return found


def test_an_entry_records_what_recording_directly_would_and_masks_its_secrets(tmp_path: Path) -> None:
    secret = "sk-inbox-secret-4471"
    report = make_report("s1", "2026-11-01T02:00:00Z", {"a": (3, 3), "b": (1, 3)}, agent_id="keyword",
                         tags={"branch": "main"}, git={"commit": "abc123", "branch": "main"},
                         suites={"tests/s.jsonl": "f" * 64}, settings={"runs": 3})
    direct, deferred = f"sqlite:///{tmp_path / 'direct.sqlite'}", f"sqlite:///{tmp_path / 'deferred.sqlite'}"
    store = HistoryStore.open(direct)
    try:
        store.record(report)
    finally:
        store.close()
    inbox = inbox_of(deferred)
    assert inbox == tmp_path / "deferred.sqlite.inbox"
    entry = deposit(inbox, "s1.json", report)
    assert '"run_details"' not in entry.read_text()  # the history keeps no runs: nor does the inbox
    HistoryStore.open(deferred, create=False).close()
    assert not entry.exists() and _rows(deferred) == _rows(direct)

    register_secret(secret)  # an agent's key, echoed where the report keeps text
    leaky = make_report("s2", "2026-11-01T03:00:00Z", {"a": (0, 2)})
    case = leaky.results[0]
    reason = case.failure_reasons[0].model_copy(update={"reason": f"401: bad key {secret}"})
    leaky = leaky.model_copy(update={"results": [case.model_copy(update={"failure_reasons": [reason]})]})
    entry = deposit(inbox, "s2.json", leaky)
    assert secret not in entry.read_text() and "bad key ***" in entry.read_text()
    assert json.loads(entry.read_text())["metadata"]["sweep_id"] == "s2"


def test_only_a_plain_sqlite_file_has_an_inbox() -> None:
    assert inbox_of("sqlite:////srv/farm/h.sqlite") == Path("/srv/farm/h.sqlite.inbox")
    assert inbox_of("sqlite+pysqlite:///rel/h.db") == Path("rel/h.db.inbox")
    for url in ("postgresql+psycopg://farm:pw@db/farm", "sqlite://", "sqlite:///:memory:", "sqlite:////",
                "sqlite:///h.db?mode=ro", "sqlite:///a%20b.db", "sqlite:///~/h.db"):  # recorded directly
        assert inbox_of(url) is None, url


def test_sweeps_started_in_one_second_are_recorded_in_the_order_they_were_left(tmp_path: Path) -> None:
    """``last`` is the sweep recorded last when two started in the same second; their ids end in a
    random part, so the inbox is read in the order its entries were written, not by name."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    inbox = inbox_of(url)
    assert inbox is not None
    earlier = deposit(inbox, "20261101T020000-ffffff.json",
                      make_report("20261101T020000-ffffff", "2026-11-01T02:00:00Z", {"a": (1, 1)}))
    os.utime(earlier, ns=(earlier.stat().st_mtime_ns - 10**9,) * 2)  # left a second before the next one
    deposit(inbox, "20261101T020000-000000.json",
            make_report("20261101T020000-000000", "2026-11-01T02:00:00Z", {"a": (0, 1)}))
    store = HistoryStore.open(url, create=False)
    try:
        assert [s.sweep_id for s in store.sweeps()] == ["20261101T020000-000000", "20261101T020000-ffffff"]
    finally:
        store.close()


def test_a_reader_that_finds_a_new_history_half_made_waits_for_its_migration(tmp_path: Path) -> None:
    """SQLite commits each CREATE of a migration on its own: a reader that opened a new history while
    another process migrated it found farm tables without the version table, called the file another
    program's and exited 2 (three readers at once in CI). It now waits on ``FILE.migrating``.
    The migrating process is this test: it holds the lock with a half-made schema, then lets go."""
    data = tmp_path / "data"
    data.mkdir()
    database = data / "history.sqlite"
    with open(data / "history.sqlite.migrating", "a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        with sqlite3.connect(database) as db:
            db.execute("CREATE TABLE farm_sweeps (id INTEGER PRIMARY KEY)")  # the migration's first step
        env = {**os.environ, "PYTHONPATH": str(ROOT), "FARM_DATA_DIR": str(data)}
        reader = subprocess.Popen([sys.executable, "-m", "farm", "history", "--json"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with contextlib.suppress(subprocess.TimeoutExpired):
            reader.wait(timeout=10)  # long enough to have given up before (three looks over 0.75 s)
        with sqlite3.connect(database) as db:  # the other migration, undone: the reader makes it
            db.execute("DROP TABLE farm_sweeps")
    out, err = reader.communicate(timeout=300)
    assert reader.returncode == 0, err
    assert json.loads(out)["sweeps"] == [] and err == ""
