"""Observers fan a sweep's events out: a display that breaks is dropped, a durable writer's error stops the sweep."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest

from farm import RunStatus, TestSettings, run_sweep
from farm.sweep.observers import JsonlObserver, Observers

AGENTS = Path(__file__).resolve().parents[1] / "agents" / "basic.py"


class BrokenBar:
    """A display observer whose terminal went away after the first run."""

    def __init__(self) -> None:
        self.calls = 0

    def on_start(self, start: object) -> None: ...

    def on_result(self, result: object) -> None:
        self.calls += 1
        raise OSError("the terminal is gone")

    def on_case(self, stats: object) -> None: ...

    def on_finish(self, report: object) -> None: ...


class ClosedStream(io.StringIO):
    """A JSONL target that fails once runs come in (a full disk)."""

    def write(self, text: str) -> int:
        if '"result"' in text:
            raise OSError("disk full")
        return super().write(text)


def _settings(tmp_path: Path) -> TestSettings:
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps({"id": "f", "input": "x", "expected": "yes"}) + "\n")
    return TestSettings(input=str(suite), name=f"py:{AGENTS}:flaky", runs=4, cwd=str(tmp_path))


def test_a_crashing_display_observer_is_logged_once_and_the_sweep_goes_on(tmp_path, caplog) -> None:
    bar, stream = BrokenBar(), io.StringIO()
    with caplog.at_level(logging.ERROR, logger="farm.sweep.observers"):
        report = run_sweep(_settings(tmp_path), Observers(bar, JsonlObserver(stream)))
    assert report.summary.total_runs == 4 and bar.calls == 1  # dropped after its first failure
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    statuses = sorted(e["status"] for e in events if e["type"] == "result")  # the durable stream got every run
    assert statuses == sorted([RunStatus.FAILED.value] * 2 + [RunStatus.PASSED.value] * 2)
    assert [r.getMessage() for r in caplog.records] == ["observer BrokenBar failed; the sweep goes on without it"]


def test_a_failing_durable_writer_still_stops_the_sweep(tmp_path) -> None:
    with pytest.raises(OSError, match="disk full"):
        run_sweep(_settings(tmp_path), Observers(JsonlObserver(ClosedStream())))
