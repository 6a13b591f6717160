"""A JSON report written before the sweep's envelope was typed (``tests/goldens/old_report.json``,
by the farm of 2026-11-28 with a few keys older farms wrote added) still loads: it writes back the
same metadata, key by key, records in the history and compares (issue 38)."""

from __future__ import annotations

import json
from pathlib import Path

from farm.history.store import HistoryStore
from farm.reports import render_report
from farm.reports.json_report import parse_json_report
from farm.stats.compare import compare, snapshot_of

OLD = Path(__file__).resolve().parents[1] / "goldens" / "old_report.json"


def test_an_old_report_writes_back_the_same_metadata() -> None:
    text = OLD.read_text()
    report = parse_json_report(text)
    again = json.loads(render_report(report, "json"))
    assert again["metadata"] == json.loads(text)["metadata"]
    assert parse_json_report(json.dumps(again)).written_metadata() == report.written_metadata()


def test_an_old_report_records_in_the_history_and_compares(tmp_path: Path) -> None:
    report = parse_json_report(OLD.read_text())
    meta = json.loads(OLD.read_text())["metadata"]
    store = HistoryStore.open(f"sqlite:///{tmp_path / 'h.db'}")
    try:
        store.record(report)
        info = store.sweep(meta["sweep_id"])
        assert info is not None and info.tags == meta["tags"] and info.journal == meta["journal"]
        snapshot = store.snapshot(info)
    finally:
        store.close()
    head = snapshot_of(report)
    assert (head.sweep_id, head.started_at, head.tags) == (meta["sweep_id"], meta["started_at"], meta["tags"])
    assert compare(snapshot, head).summary["unchanged"] == len(report.results)
