"""The history store on SQLite and on a real PostgreSQL: migrations, idempotent recording, look-ups."""

from __future__ import annotations

import threading
from importlib import resources
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import func, inspect, select

from farm.errors import FarmRuntimeError, SettingsError
from farm.history.engine import current_revision, open_engine
from farm.history.location import history_url as resolve_url
from farm.history.store import HistoryStore
from farm.history.tables import SCHEMA_REVISION, VERSION_TABLE, case_results, metadata, sweep_tags, sweeps
from farm.history.trends import case_points, case_trend, class_changes, flag, sparkline
from farm.stats.compare import compare
from tests.support.browser_fixtures import make_report

FARM_TABLES = {"farm_sweeps", "farm_sweep_tags", "farm_case_results", "farm_baselines", "farm_comparisons",
               "farm_failure_modes", "farm_judge_checks", "farm_alembic_version"}


# ------------------------------------------------------------------------------------ opening


def test_an_empty_database_is_migrated_to_head_and_matches_the_tables(history_url: str) -> None:
    engine = open_engine(history_url)
    try:
        assert current_revision(engine) == SCHEMA_REVISION
        assert set(inspect(engine).get_table_names()) >= FARM_TABLES
        with engine.connect() as conn:  # the migration builds exactly what tables.py declares
            context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
            diffs = compare_metadata(context, metadata)
        assert diffs == []
        open_engine(history_url).dispose()  # opening again: already at head, nothing to do
        assert current_revision(engine) == SCHEMA_REVISION
    finally:
        engine.dispose()


def test_schema_revision_is_alembics_head() -> None:
    config = Config()
    config.set_main_option("script_location", str(resources.files("farm.history") / "migrations"))
    assert ScriptDirectory.from_config(config).get_current_head() == SCHEMA_REVISION


def test_url_resolution_and_bad_urls(tmp_path: Any) -> None:
    assert resolve_url(None, {"FARM_DATA_DIR": str(tmp_path)}) == f"sqlite:///{tmp_path}/history.sqlite"
    assert resolve_url(None, {"FARM_HISTORY_URL": "sqlite:///x.db"}) == "sqlite:///x.db"
    assert resolve_url("sqlite:///flag.db", {"FARM_HISTORY_URL": "sqlite:///x.db"}) == "sqlite:///flag.db"
    assert resolve_url(None, {}).endswith(".local/share/agent-farm/history.sqlite")
    with pytest.raises(SettingsError, match="not a database URL"):
        open_engine("not a url")
    with pytest.raises(SettingsError, match="unsupported database 'mysql'"):
        open_engine("mysql://root:secret@127.0.0.1/test")


def test_an_unreachable_postgresql_is_a_runtime_error_without_the_password() -> None:
    from tests.support.servers import free_port

    with pytest.raises(FarmRuntimeError) as caught:
        open_engine(f"postgresql://farm:s3cret@127.0.0.1:{free_port()}/nowhere")
    assert "s3cret" not in str(caught.value) and "cannot open" in str(caught.value)


# ------------------------------------------------------------------------------------ recording


def test_recording_stores_the_sweep_once(history_url: str) -> None:
    report = make_report("s1", "2026-11-01T02:00:00Z", {"a": (3, 3), "b": (1, 3)}, agent_id="keyword",
                         connector="openai.gpt-4o", tags={"branch": "main", "trigger": "nightly"},
                         git={"commit": "abc123", "branch": "main"}, suites={"tests/s.jsonl": "f" * 64},
                         settings={"runs": 3})
    store = HistoryStore.open(history_url)
    try:
        first, again = store.record(report), store.record(report)
        assert first.created and not again.created and first.pk == again.pk
        with store.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(sweeps)).scalar() == 1
            assert conn.execute(select(func.count()).select_from(case_results)).scalar() == 2
            assert conn.execute(select(func.count()).select_from(sweep_tags)).scalar() == 2
            row = conn.execute(select(case_results).where(case_results.c.case_id == "b")).one()
        assert (row.runs, row.passed, row.failed, row.label, row.content_hash) == (3, 1, 2, "flaky", "h-b")
        assert row.failure_reasons == [{"reason": "equals: expected 'ok'", "count": 2,
                                        "failure_class": "assertion:equals"}]
        assert row.pass_at_k == {"1": pytest.approx(1 / 3)}
        info = store.sweep("s1")
        assert info is not None
        assert (info.agent, info.connector, info.git_commit, info.git_branch) == (
            "keyword", "openai.gpt-4o", "abc123", "main")
        assert info.tags == {"branch": "main", "trigger": "nightly"} and info.status == "complete"
        assert info.to_json()["started_at"] == "2026-11-01T02:00:00Z"
    finally:
        store.close()


def test_concurrent_recordings_of_one_sweep_store_it_once(history_url: str) -> None:
    report = make_report("race", "2026-11-01T02:00:00Z", {f"c{i}": (1, 1) for i in range(50)})
    store = HistoryStore.open(history_url)
    created: list[bool] = []
    threads = [threading.Thread(target=lambda: created.append(store.record(report).created)) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(created) == [False, False, False, True]
        with store.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(case_results)).scalar() == 50
    finally:
        store.close()


def test_a_stopped_sweep_keeps_its_status() -> None:
    from farm.history.record import sweep_status

    assert sweep_status({"stopped": "interrupted"}) == "stopped"
    assert sweep_status({"status": "abandoned"}) == "abandoned"
    assert sweep_status({}) == "complete"


# ------------------------------------------------------------------------------------ finding


def _three_sweeps(store: HistoryStore) -> None:
    store.record(make_report("20261101T020000-aaaaaa", "2026-11-01T02:00:00Z", {"a": (5, 5), "b": (5, 5)},
                             tags={"trigger": "nightly"}))
    store.record(make_report("20261102T020000-bbbbbb", "2026-11-02T02:00:00Z", {"a": (5, 5), "b": (3, 5)},
                             tags={"trigger": "manual"}))
    store.record(make_report("20261103T020000-cccccc", "2026-11-03T02:00:00Z", {"a": (5, 5), "b": (0, 5)},
                             tags={"trigger": "nightly"}))


def test_latest_tags_prefixes_and_baselines(history_url: str) -> None:
    store = HistoryStore.open(history_url)
    try:
        _three_sweeps(store)
        newest = store.latest()
        assert newest is not None and newest.sweep_id.endswith("cccccc")
        nightly = store.latest(tag=("trigger", "nightly"), before=newest)
        assert nightly is not None and nightly.sweep_id.endswith("aaaaaa")
        assert [s.sweep_id[-6:] for s in store.sweeps(last=2)] == ["cccccc", "bbbbbb"]
        assert store.latest(skip=1).sweep_id.endswith("bbbbbb")  # type: ignore[union-attr]
        assert store.sweep("20261102").sweep_id.endswith("bbbbbb")  # type: ignore[union-attr]
        assert store.sweep("2026110") is None  # ambiguous prefix
        store.set_baseline("main", "20261101T020000-aaaaaa")
        store.set_baseline("main", "20261102T020000-bbbbbb")  # moved
        assert [(b.name, b.sweep.sweep_id[-6:]) for b in store.baselines()] == [("main", "bbbbbb")]
        assert store.remove_baseline("main") and not store.remove_baseline("main")
        assert store.baseline("main") is None and store.count() == 3
    finally:
        store.close()


def test_a_snapshot_compares_like_the_report_and_comparisons_are_kept_once(history_url: str) -> None:
    store = HistoryStore.open(history_url)
    try:
        _three_sweeps(store)
        base, head = store.sweep("20261101T020000-aaaaaa"), store.latest()
        assert base is not None and head is not None
        result = compare(store.snapshot(base), store.snapshot(head))
        assert {c.id: c.verdict for c in result.cases} == {"a": "inconclusive", "b": "regressed"}
        assert result.base.tags == {"trigger": "nightly"} and result.head.started_at == "2026-11-03T02:00:00Z"
        assert store.store_comparison(base.pk, head.pk, "last-nightly", result)
        assert not store.store_comparison(base.pk, head.pk, "last-nightly", result)
        assert store.comparisons_of(head)["last-nightly"] == result
    finally:
        store.close()


def test_trends_align_points_with_sweeps_and_flag_new_trouble(history_url: str) -> None:
    store = HistoryStore.open(history_url)
    try:
        _three_sweeps(store)
        store.record(make_report("20261104T020000-dddddd", "2026-11-04T02:00:00Z", {"a": (5, 5)}))
        window = list(reversed(store.sweeps(last=4)))
        trends = case_points(store.engine, window)
        assert list(trends) == ["a", "b"]
        assert sparkline(trends["a"]) == "████" and sparkline(trends["b"]) == "█▅▁·"
        assert [(c["from"], c["to"]) for c in class_changes(trends["b"])] == [("stable", "flaky"), ("flaky", "broken")]
        assert flag(trends["b"]) == "became broken" and flag(trends["a"]) is None
        only_b = case_points(store.engine, window, "b")
        assert list(only_b) == ["b"]
        assert [p.pass_rate for p in case_trend(store.engine, "b", last=2)] == [60.0, 0.0]
    finally:
        store.close()


def test_semantic_consistency_is_kept_compared_and_trended(history_url: str) -> None:
    store = HistoryStore.open(history_url)
    try:
        for sweep_id, started, figure in (("20261101T020000-aaaaaa", "2026-11-01T02:00:00Z", 0.9),
                                          ("20261102T020000-bbbbbb", "2026-11-02T02:00:00Z", 0.4)):
            report = make_report(sweep_id, started, {"a": (5, 5)})
            report.results[0].semantic_consistency = figure
            store.record(report)
        base, head = store.sweep("20261101T020000-aaaaaa"), store.latest()
        assert base is not None and head is not None
        result = compare(store.snapshot(base), store.snapshot(head))
        assert result.cases[0].semantic_consistency == (0.9, 0.4)
        trends = case_points(store.engine, list(reversed(store.sweeps(last=2))))
        assert [p.semantic_consistency for p in trends["a"] if p is not None] == [0.9, 0.4]
    finally:
        store.close()
