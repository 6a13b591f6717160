"""The Python API: what ``farm`` exports, and a sweep run without the CLI."""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import warnings
from pathlib import Path

import pytest

import farm
from farm import Reply, RunStatus, TestSettings, arun_sweep, run_sweep, write_report
from farm.errors import FarmRuntimeError, ReporterError, SettingsError
from farm.reports import parse_json_report

AGENTS = Path(__file__).resolve().parent / "agents" / "basic.py"


def test_exported_names_are_sorted_and_importable() -> None:
    assert farm.__all__ == sorted(farm.__all__)
    star: dict[str, object] = {}
    exec("from farm import *", star)  # an __all__ name the package does not define raises here
    assert sorted(set(star) - {"__builtins__"}) == farm.__all__
    for name in farm.__all__:  # each is the farm's own object under its own name, not an alias
        exported = star[name]
        assert (getattr(exported, "__module__", "").split(".")[0], getattr(exported, "__name__", "")) == ("farm", name)
    assert Reply(text="x").output == "x"


def test_run_sweep_returns_the_report_and_writes_nothing(tmp_path: Path) -> None:
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps({"id": "f", "input": "x", "expected": "yes"}) + "\n")
    seen: list[RunStatus] = []

    class Collect:
        def on_start(self, start: object) -> None: ...
        def on_result(self, result: farm.RunResult) -> None: seen.append(result.status)
        def on_case(self, stats: object) -> None: ...
        def on_finish(self, report: object) -> None: ...

    report = run_sweep(TestSettings(input=str(suite), name=f"py:{AGENTS}:flaky", runs=4, cwd=str(tmp_path)),
                       Collect())
    assert report.results[0].pass_rate == 50.0 and report.results[0].label == "flaky"
    assert sorted(seen) == [RunStatus.FAILED] * 2 + [RunStatus.PASSED] * 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_all_is_exactly_the_public_names() -> None:
    """httpx's exported-members test: nothing public is left out of ``__all__``, nothing extra is in it."""
    public = sorted(name for name in dir(farm)  # dir: the public names load on first use (PEP 562)
                    if not name.startswith("_") and not inspect.ismodule(getattr(farm, name)))
    assert farm.__all__ == public
    assert {"arun_sweep", "run_sweep", "write_report", "SweepStop"} <= set(farm.__all__)


def _suite(tmp_path: Path) -> TestSettings:
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps({"id": "f", "input": "x", "expected": "yes"}) + "\n")
    return TestSettings(input=str(suite), name=f"py:{AGENTS}:flaky", runs=4, cwd=str(tmp_path))


def test_arun_sweep_runs_on_the_callers_event_loop(tmp_path: Path) -> None:
    async def caller() -> farm.SweepReport:
        ticks = 0

        async def ticker() -> None:  # the loop stays free while the sweep runs
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        report = await arun_sweep(_suite(tmp_path))
        task.cancel()
        assert ticks > 0
        return report

    report = asyncio.run(caller())
    assert report.results[0].pass_rate == 50.0


def test_run_sweep_inside_a_running_loop_is_a_clear_error(tmp_path: Path) -> None:
    async def caller() -> None:
        run_sweep(_suite(tmp_path))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" would fail the test
        with pytest.raises(FarmRuntimeError, match=r"running event loop .*await farm\.arun_sweep"):
            asyncio.run(caller())
        gc.collect()


def test_write_report_follows_the_extension(tmp_path: Path) -> None:
    report = run_sweep(_suite(tmp_path))
    for name, probe in (("r.html", "<!DOCTYPE html>"), ("r.md", "# Agent Test Report"), ("r.xml", "<testsuites"),
                        ("r.json", '"summary"'), ("r.jsonl", '"type": "summary"')):
        assert write_report(report, tmp_path / name) == tmp_path / name
        assert probe in (tmp_path / name).read_text()
    assert parse_json_report((tmp_path / "r.json").read_text()) == report
    with pytest.raises(SettingsError, match=r"\.pdf"):
        write_report(report, tmp_path / "r.pdf")
    with pytest.raises(ReporterError, match="cannot write"):
        write_report(report, tmp_path / "missing" / "r.json")
