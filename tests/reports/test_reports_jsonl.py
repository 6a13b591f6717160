"""Tests of farm.reports.jsonl: the streamed event file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.errors import InputError
from farm.models import Case, CaseStats, CheckOutcome, ErrorInfo, RunResult, RunStatus, SweepReport
from farm.reports.jsonl import JsonlWriter, read_jsonl_events, render_jsonl
from farm.stats import CaseAccumulator, CasePlan, build_report

FAILED_CHECK = CheckOutcome(name="contains", passed=False, message="missing 'AI'", expected="AI", actual="ML")
PASSED_CHECK = CheckOutcome(name="type", passed=True, message="", expected="string", actual="string")


def results() -> list[RunResult]:
    return [
        RunResult(case_id="T1", run=1, status=RunStatus.PASSED, duration_ms=12.5, output={"k": ["AI"]},
                  checks=[PASSED_CHECK]),
        RunResult(case_id="T1", run=2, status=RunStatus.FAILED, duration_ms=20.0, output="ML",
                  checks=[PASSED_CHECK, FAILED_CHECK], retries=2),
        RunResult(case_id="T2", run=1, status=RunStatus.TIMEOUT, duration_ms=30_000.0,
                  error=ErrorInfo(type="TimeoutError", message="timeout after 30s")),
    ]


def report_of(rs: list[RunResult]) -> SweepReport:
    accs: dict[str, CaseAccumulator] = {}
    for r in rs:
        case = Case(id=r.case_id, format="yao", turns=[])
        accs.setdefault(r.case_id, CaseAccumulator(case, CasePlan(runs=2, required=1))).add(r)
    return build_report([a.stats() for a in accs.values()], duration_ms=30_100, runs_per_case=2,
                        environment={}, metadata={"agent_id": "keyword", "started_at": "2024-12-17T10:00:00Z",
                                                  "sweep_id": "s-1"})


def test_every_event_is_written_and_flushed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    rs = results()
    report = report_of(rs)
    with path.open("w", encoding="utf-8") as stream:
        writer = JsonlWriter(stream)
        writer.start(timestamp="2024-12-17T10:00:00Z", agent_id="keyword", total_cases=2, total_runs=4,
                     sweep_id="s-1")
        # A reader tailing the file sees each line while the writer still holds it open.
        assert [e["type"] for e in read_jsonl_events(path)] == ["start"]
        writer.result(rs[0])
        assert len(path.read_text(encoding="utf-8").splitlines()) == 2
        writer.stability(report.results[0])
        writer.summary(report)
        assert [e["type"] for e in read_jsonl_events(path)] == ["start", "result", "stability", "summary"]
    start = next(read_jsonl_events(path))
    assert start == {"type": "start", "timestamp": "2024-12-17T10:00:00Z", "agent_id": "keyword",
                     "total_cases": 2, "total_runs": 4, "sweep_id": "s-1"}


def test_result_lines_carry_run_status_output_failed_checks_error_and_retries() -> None:
    lines = [json.loads(line) for line in render_jsonl(report_of(results()), results()).splitlines()]
    failed, timed_out = lines[2], lines[3]
    assert failed == {"type": "result", "id": "T1", "run": 2, "status": "failed", "duration_ms": 20.0,
                      "output": "ML", "failed_checks": [{"name": "contains", "message": "missing 'AI'",
                                                         "expected": "AI", "actual": "ML"}],
                      "judged_checks": [], "error": None, "retries": 2,
                      "failure_class": None, "failed_turn": None}  # made by hand: no execute_run classed it
    assert timed_out["status"] == "timeout" and timed_out["error"] == "timeout after 30s"
    assert timed_out["output"] is None and timed_out["failed_checks"] == []
    assert lines[1]["output"] == {"k": ["AI"]} and lines[1]["failed_checks"] == []


def test_stability_lines_hold_every_statistic_but_the_kept_runs() -> None:
    lines = [json.loads(line) for line in render_jsonl(report_of(results())).splitlines()]
    assert [e["type"] for e in lines] == ["start", "stability", "stability", "summary"]
    stability = lines[1]
    assert set(stability) == {"type"} | set(CaseStats.model_fields) - {"run_details"}
    assert (stability["id"], stability["pass_rate"], stability["label"]) == ("T1", 50.0, "flaky")


def test_summary_line_has_the_sweep_figures_and_yaos_totals() -> None:
    report = report_of(results())
    summary = [json.loads(line) for line in render_jsonl(report).splitlines()][-1]
    assert summary["type"] == "summary"
    assert {k: summary[k] for k in report.summary.model_dump()} == report.summary.model_dump()
    # T1 passes 1 of 2 (1 required); T2's only run timed out (1 required): one passed, one failed.
    assert (summary["total"], summary["passed"], summary["failed"]) == (2, 1, 1)
    assert summary["duration_ms"] == 30_100


def test_a_lone_surrogate_from_an_agent_does_not_break_the_stream(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with path.open("w", encoding="utf-8") as stream:
        JsonlWriter(stream).result(RunResult(case_id="X", run=1, status=RunStatus.PASSED, output="bad \ud800"))
    assert next(read_jsonl_events(path))["output"] == "bad \ud800"


def test_reading_skips_blank_lines_and_a_line_still_being_written(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    path.write_text('{"type": "start"}\n\n{"type": "result", "id": "T1"}\n{"type": "res', encoding="utf-8")
    assert [e["type"] for e in read_jsonl_events(path)] == ["start", "result"]


@pytest.mark.parametrize(("text", "message"), [
    ('{"type": "start"}\nnot json\n{"type": "summary"}\n', r"bad\.jsonl:2: not a JSON line"),
    ('{"type": "start"}\n[1, 2]\n', r"bad\.jsonl:2: expected a JSON object, got list"),
])
def test_reading_a_broken_file_names_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        list(read_jsonl_events(path))


def test_the_journal_and_an_output_stream_write_each_run_s_own_line() -> None:
    """The result line is made once per run for both streams: the next run (even an equal-looking
    one, made anew) gets its own line, never the last one's."""
    from farm.reports.jsonl import result_event, result_line

    first, second = results()[0], results()[0].model_copy(update={"run": 7})
    assert json.loads(result_line(first)) == result_event(first)
    assert json.loads(result_line(second))["run"] == 7
    assert json.loads(result_line(first))["run"] == 1


def test_writers_sharing_event_lines_make_each_run_s_line_once() -> None:
    """A sweep's journal and ``-o`` streams share one ``EventLines``: the second writer gets the
    line the first made, and the next run (equal-looking, made anew) its own."""
    import io

    from farm.reports.jsonl import EventLines, result_event, stability_line

    lines = EventLines()
    first, second = results()[0], results()[0].model_copy(update={"run": 7})
    made = lines.result(first)
    assert json.loads(made) == result_event(first) and lines.result(first) is made
    assert json.loads(lines.result(second))["run"] == 7 and json.loads(lines.result(first))["run"] == 1
    streams = [io.StringIO(), io.StringIO()]
    for stream in streams:
        JsonlWriter(stream, lines).result(second)
    assert streams[0].getvalue() == streams[1].getvalue() == lines.result(second) + "\n"
    report = report_of(results())
    assert lines.stability(report.results[0]) == stability_line(report.results[0])
