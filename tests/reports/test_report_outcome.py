"""How a sweep ended is typed (``SweepReport.outcome``), set by the one finisher, and written out
under the same ``metadata`` keys as before (issue 25, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

from farm import TestSettings
from farm.api import prepare_sweep
from farm.models import BudgetFigures, CaseStats, StopReason, SweepReport, SweepStatus
from farm.reports import render_report
from farm.reports.json_report import parse_json_report
from farm.reports.jsonl import summary_event
from farm.stats.compare import snapshot_of
from farm.stats.sweep import exit_code_for
from farm.sweep.lifecycle import finish_sweep
from tests.reports.test_reports_json import _stats, sample_report

AGENT = "py:tests/agents/distributed.py:by_run"
OUTCOME_KEYS = {"status", "stopped", "not_run", "reason", "budget"}


def _finished(tmp_path: Path) -> SweepReport:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": f"c{i}", "input": "hi"}) + "\n" for i in range(3)), encoding="utf-8")
    plan = prepare_sweep(TestSettings(input=str(suite), name=AGENT)).plan
    ran: dict[str, CaseStats] = {"c0": _stats(next(iter(plan.cases)).case, ["passed"], 1)}
    return finish_sweep(plan, ran, case_ids=plan.case_ids, started_at="2026-11-25T00:00:00Z", duration_ms=5.0,
                        stopped=StopReason.BUDGET, reason="budget of $1 reached",
                        budget=BudgetFigures(max_usd=1.0, spent_usd=1.25, spent_tokens=40))


def test_the_finisher_types_how_the_sweep_ended_and_writes_the_same_metadata_keys(tmp_path: Path) -> None:
    report = _finished(tmp_path)
    outcome = report.outcome
    assert (outcome.status, outcome.stopped, outcome.not_run) == (SweepStatus.STOPPED, StopReason.BUDGET, ["c1", "c2"])
    assert outcome.reason == "budget of $1 reached" and outcome.budget == BudgetFigures(max_usd=1.0, spent_usd=1.25,
                                                                                         spent_tokens=40)
    assert not OUTCOME_KEYS & set(report.metadata)  # typed, not patched into the dict
    written = json.loads(render_report(report, "json"))
    assert "outcome" not in written
    meta = written["metadata"]
    assert (meta["status"], meta["stopped"], meta["not_run"], meta["reason"]) == (
        "stopped", "budget", ["c1", "c2"], "budget of $1 reached")
    assert meta["budget"] == {"max_usd": 1.0, "max_tokens": None, "spent_usd": 1.25, "spent_tokens": 40}
    assert meta["sweep_id"] == report.envelope.sweep_id and "completed_at" in meta
    assert summary_event(report)["metadata"] == meta  # the JSONL stream's summary line says the same
    assert parse_json_report(json.dumps(written)) == report  # and reads back typed
    assert exit_code_for(report) == 4  # a budget stop's exit code comes from the typed reason


def test_a_complete_sweep_writes_its_status_and_no_stop_keys(tmp_path: Path) -> None:
    report = _finished(tmp_path).model_copy(update={"outcome": sample_report().outcome})
    meta = json.loads(render_report(report, "json"))["metadata"]
    assert not OUTCOME_KEYS & set(meta)  # a report built without an outcome writes none
    plan_report = finish_sweep(prepare_sweep(TestSettings(input=str(tmp_path / "suite.jsonl"), name=AGENT)).plan,
                               {}, case_ids=[], started_at="2026-11-25T00:00:00Z", duration_ms=1.0)
    meta = json.loads(render_report(plan_report, "json"))["metadata"]
    assert meta["status"] == "complete" and not {"stopped", "not_run", "reason", "budget"} & set(meta)


def test_an_older_json_report_with_the_keys_in_metadata_reads_and_compares(tmp_path: Path) -> None:
    doc = json.loads(render_report(sample_report(), "json"))
    doc["metadata"] |= {"stopped": "interrupted", "not_run": ["T9"],
                        "budget": {"max_usd": 2.0, "max_tokens": None, "spent_usd": 0.5, "spent_tokens": 7}}
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc), encoding="utf-8")  # no status: older than SPEC 11
    report = parse_json_report(old.read_text(encoding="utf-8"))
    assert report.outcome.stopped == StopReason.INTERRUPTED and report.outcome.not_run == ["T9"]
    assert report.outcome.status is None and report.outcome.sweep_status() == "stopped"
    assert report.outcome.budget is not None and report.outcome.budget.spent_usd == 0.5
    assert "Not run" in render_report(report, "markdown") and "$0.5" in render_report(report, "markdown")
    assert json.loads(render_report(report, "json"))["metadata"] == doc["metadata"]
    assert snapshot_of(report).partial is False  # farm compare: no status is not a partial snapshot, as before
