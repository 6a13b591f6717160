"""The sweep's envelope typed (issue 38): the plan is frozen once built, pre-run contributors make a
new plan, the typed fields cross Redis and the journal as they were set, and ``--order
failing-first`` keeps a distributed submitter's compact plan compact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from farm.api import TestSettings, prepare_sweep
from farm.history.facts import HistoryFacts
from farm.history.session import HistoryOptions, HistorySession
from farm.history.store import HistoryStore
from farm.models import HistoryRecord, SweepEnvelope
from farm.plan.compact_cases import CompactCases
from farm.plan.sweep_plan import SweepPlan
from farm.reports import render_report
from farm.reports.json_report import parse_json_report
from farm.sweep.lifecycle import finish_sweep
from tests.support.browser_fixtures import make_report

AGENT = "py:tests/agents/distributed.py:by_run"


def write_suite(path: Path, cases: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"C{i:03d}", "input": f"ping {i}",
                                        "assert": {"type": "contains", "value": "ok"}}) + "\n"
                            for i in range(cases)), encoding="utf-8")
    return path


def test_the_plan_is_frozen_and_a_contributor_makes_a_new_one(tmp_path: Path) -> None:
    plan = prepare_sweep(TestSettings(input=str(write_suite(tmp_path / "s.jsonl", 3)), name=AGENT)).plan
    with pytest.raises(ValidationError):
        plan.parallel = 2
    with pytest.raises(ValidationError):
        plan.envelope.otel = True
    told = plan.with_envelope(otel=True, quarantine={"C001": {"case": "C001", "owner": "ana"}})
    assert plan.envelope.otel is None and plan.envelope.quarantine is None  # the prepared plan is untouched
    assert told.envelope.otel is True and told.cases is plan.cases and told.envelope.input == plan.envelope.input


def test_the_envelope_keeps_which_keys_were_set_through_json() -> None:
    envelope = SweepEnvelope(input="s.jsonl", min_pass_rate=None, runs=None, otel=True,
                             history=HistoryRecord(tags={"team": "core"}, recorder="worker", pass_k=[1, 5]))
    assert envelope.written() == {"input": "s.jsonl", "min_pass_rate": None, "runs": None, "tags": {"team": "core"},
                                  "pass_k": [1, 5], "history": "worker", "otel": True}
    again = SweepEnvelope.model_validate_json(envelope.model_dump_json())
    assert again == envelope and again.written() == envelope.written()
    assert (again.recorder, again.tags) == ("worker", {"team": "core"})


def test_a_plan_given_its_envelope_as_metadata_keys_types_them(tmp_path: Path) -> None:
    """A journal's plan line written by an older farm (``metadata`` held the control keys)."""
    line = json.loads(prepare_sweep(TestSettings(input=str(write_suite(tmp_path / "s.jsonl", 1)), name=AGENT))
                      .plan.model_dump_json())
    del line["envelope"]
    line["metadata"] = {"input": "s.jsonl", "history": "submitter", "tags": {}, "otel": True, "mine": 1}
    plan = SweepPlan.model_validate(line)
    assert plan.envelope.recorder == "submitter" and plan.envelope.otel is True and plan.metadata == {"mine": 1}
    assert plan.envelope.written() == {"input": "s.jsonl", "tags": {}, "history": "submitter", "otel": True}


def test_a_report_writes_its_envelope_as_the_same_flat_keys() -> None:
    report = make_report("s1", "2026-11-01T00:00:00Z", {"a": (1, 2)}, tags={"team": "core"}, history="worker",
                         adaptive="exact", note="mine")
    assert report.metadata == {"note": "mine"}  # the user's own keys only
    assert report.envelope.recorder == "worker" and report.envelope.adaptive
    written = json.loads(render_report(report, "json"))["metadata"]
    assert {"sweep_id", "tags", "history", "adaptive", "note"} <= set(written)
    again = parse_json_report(render_report(report, "json"))
    assert again.envelope == report.envelope and again.written_metadata() == report.written_metadata()


def test_failing_first_keeps_a_compact_plan_compact(tmp_path: Path, sqlite_history_url: str) -> None:
    """``--order failing-first --broker``: the plan's cases stay in their stored form, reordered
    string by string, none decoded (a million-case plan was rebuilt as a model per case)."""
    suite = write_suite(tmp_path / "s.jsonl", 30)
    prepared = prepare_sweep(TestSettings(input=str(suite), name=AGENT, broker="redis://127.0.0.1:1/0"))
    assert isinstance(prepared.plan.cases, CompactCases)
    store = HistoryStore.open(sqlite_history_url)
    try:
        store.record(make_report("old", "2026-11-01T00:00:00Z", {"C007": (0, 2), "C002": (1, 2), "C003": (2, 2)}))
    finally:
        store.close()
    session = HistorySession(HistoryOptions(url=sqlite_history_url, order="failing-first"), tell=lambda _: None)
    plan = session.start(prepared.plan, facts=HistoryFacts(), files=[suite], root=tmp_path, message_mode=False)
    assert isinstance(plan.cases, CompactCases) and plan.cases is not prepared.plan.cases
    ids = [f"C{i:03d}" for i in range(30)]
    assert plan.case_ids == ["C002", "C007", *[i for i in ids if i not in ("C002", "C007")]]
    assert prepared.plan.case_ids == ids  # the prepared plan is untouched
    assert [c.id for c in plan.cases] == plan.case_ids and [s.id for s in plan.slots()] == plan.case_ids
    assert set(plan.cases.stored) == set(prepared.plan.cases.stored)  # the same stored strings, moved
    assert plan.envelope.recorder == "submitter" and plan.envelope.history is not None


@pytest.mark.redis
def test_the_typed_envelope_crosses_redis_as_it_was_set(tmp_path: Path, redis_server: str) -> None:
    """The plan a worker loads and the report ``farm results`` reads carry the typed fields, the
    keys set (and only those) included."""
    from farm.distributed.store.sweep_store import SweepStore, connect

    suite = write_suite(tmp_path / "s.jsonl", 4)
    plan = prepare_sweep(TestSettings(input=str(suite), name=AGENT, broker=redis_server)).plan.with_envelope(
        otel=True, quarantine={"C001": {"case": "C00*", "owner": "ana", "until": "2099-12-31"}},
        history=HistoryRecord(tags={"team": "core"}, recorder="worker", pass_k=[1, 3]))
    store = SweepStore(connect(redis_server), ttl=600)
    store.save_sweep(plan, 0.0)
    loaded = store.load_sweep(plan.sweep_id)
    assert loaded is not None and loaded.envelope == plan.envelope
    written = loaded.envelope.written()
    assert written == plan.envelope.written() and "min_overall_pass_rate" not in written
    assert (loaded.envelope.otel, loaded.envelope.recorder) == (True, "worker")
    built = finish_sweep(loaded, {}, case_ids=[], started_at="2026-11-01T00:00:00Z", duration_ms=0.0)
    assert (built.envelope.otel, built.envelope.recorder, built.envelope.sweep_id) == (True, "worker", plan.sweep_id)
    report = make_report(plan.sweep_id, "2026-11-01T00:00:00Z", {"C001": (1, 2)}, tags={"team": "core"},
                         history="worker", otel=True, note="mine")
    assert store.store_report(plan.sweep_id, report)
    back = store.get_report(plan.sweep_id)
    assert back is not None and back.envelope == report.envelope and back.metadata == {"note": "mine"}


def test_a_whole_number_pass_rate_is_written_as_given() -> None:
    """``TestSettings(min_pass_rate=1)`` wrote ``1`` before the envelope was typed; a float type made it ``1.0``."""
    from farm.models.envelope import SweepEnvelope

    assert SweepEnvelope.model_validate({"min_pass_rate": 1, "min_overall_pass_rate": 90}).written() == {
        "min_pass_rate": 1, "min_overall_pass_rate": 90}
    assert SweepEnvelope.model_validate({"min_pass_rate": 0.8}).written() == {"min_pass_rate": 0.8}
