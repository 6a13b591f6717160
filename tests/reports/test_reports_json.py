"""Tests of farm.reports.json_report: the Yao JSON report and its read-back."""

from __future__ import annotations

import json

import pytest

from farm.errors import InputError
from farm.models import Case, CaseStats, CheckOutcome, ErrorInfo, RunResult, RunStatus, SweepReport
from farm.reports import json_report
from farm.reports.json_report import parse_json_report, render_json
from farm.stats import CaseAccumulator, CasePlan, build_report


def _stats(case: Case, statuses: list[str], required: int, output: object = "ok") -> CaseStats:
    acc = CaseAccumulator(case, CasePlan(runs=len(statuses), required=required))
    for n, status in enumerate(statuses, 1):
        failed = [CheckOutcome(name="contains", passed=False, message="missing 'AI'", expected="AI",
                               actual=output)] if status == "failed" else []
        error = ErrorInfo(type="AgentError", message="refused", kind="connect") if status == "error" else None
        acc.add(RunResult(case_id=case.id, run=n, status=RunStatus(status), duration_ms=100.0 * n,
                          output=output, checks=failed, error=error))
    return acc.stats()


def sample_report(runs_per_case: int = 3) -> SweepReport:
    cases = [
        _stats(Case(id="T001", format="yao", turns=[], input="Hi", suite="kw"), ["passed"] * 3, 3,
               output={"keywords": ["AI"]}),
        _stats(Case(id="T002", format="yao", turns=[], input="Yo", expected="AI", suite="kw"),
               ["passed", "failed", "error"], 3),
        _stats(Case(id="T003", format="yao", turns=[], skip=True), ["skipped"], 0),
        _stats(Case(id="T004", format="yao", turns=[], input="single"), ["passed"], 1, output="one"),
    ]
    return build_report(cases, duration_ms=12_345, runs_per_case=runs_per_case,
                        environment={"user_id": "test-user", "team_id": "test-team", "locale": "en-us"},
                        metadata={"agent_id": "keyword", "connector": "deepseek.v3",
                                  "started_at": "2024-12-17T10:00:00Z"})


def test_json_report_has_the_yao_sections_and_every_statistic() -> None:
    report = sample_report()
    doc = json.loads(render_json(report))
    assert list(doc) == ["summary", "environment", "arms", "matrix", "results", "metadata"]  # arms, matrix: SPEC 22
    assert doc["environment"]["user_id"] == "test-user"
    assert doc["metadata"]["started_at"] == "2024-12-17T10:00:00Z"
    first = doc["results"][0]
    for field in CaseStats.model_fields:
        assert field in first, field
    assert first["run_details"][0] == {"run": 1, "status": "passed", "duration_ms": 100.0,
                                       "output": {"keywords": ["AI"]}, "error": None, "error_type": None,
                                       "traceback": None, "failed_checks": [], "judged_checks": [], "retries": 0,
                                       "failure_class": None, "failed_turn": None, "queued_ms": None, "turns": None,
                                       "checkpoints": None, "trajectory": None, "served": None,
                                       "in_flight": None}
    assert doc["results"][1]["run_details"][1]["failed_checks"][0]["message"] == "missing 'AI'"
    assert doc["results"][1]["run_details"][2]["error"] == "refused"
    assert [d["failure_class"] for d in doc["results"][1]["run_details"]] == [None, "assertion:contains",
                                                                            "infra:connect"]


def test_json_summary_carries_yaos_case_counts_for_jq_scripts() -> None:
    summary = json.loads(render_json(sample_report()))["summary"]
    assert (summary["total"], summary["passed"], summary["failed"], summary["skipped"]) == (4, 2, 1, 1)
    assert (summary["agent_id"], summary["connector"]) == ("keyword", "deepseek.v3")
    assert summary["overall_pass_rate"] == 71.4  # 5 passed of the 7 runs that were not skipped
    assert summary["runs_per_case"] == 3


def test_json_results_carry_a_yao_status_and_single_run_output() -> None:
    results = json.loads(render_json(sample_report()))["results"]
    assert [r["status"] for r in results] == ["passed", "failed", "passed"]  # skipped T003: no row (Yao)
    assert list(results[0])[:2] == ["id", "status"]
    assert results[2]["output"] == "one" and results[2]["error"] is None
    assert "output" not in results[1]  # several runs: outputs live in run_details
    # Yao's CI example: jq -e '.results | all(.pass_rate >= 80)'
    assert not all(r["pass_rate"] >= 80 for r in results)


def test_skipped_cases_are_listed_in_the_summary_and_never_fail_a_jq_gate() -> None:
    doc = json.loads(render_json(sample_report()))
    assert doc["summary"]["skipped_ids"] == ["T003"] and doc["summary"]["skipped"] == 1
    assert all(r["id"] != "T003" for r in doc["results"])
    green = json.loads(render_json(build_report(
        [_stats(Case(id="a", format="yao", turns=[]), ["passed"], 1),
         _stats(Case(id="s", format="yao", turns=[], skip=True), ["skipped"], 0)],
        duration_ms=1, runs_per_case=1, environment={}, metadata={})))
    assert all(r["pass_rate"] >= 80 for r in green["results"])  # the skipped case's 0 % no longer fails it


def test_json_report_reads_back_to_the_same_model() -> None:
    report = sample_report()
    assert parse_json_report(render_json(report)) == report


def _without_details(report: SweepReport) -> SweepReport:
    return report.model_copy(update={"results": [r.model_copy(update={"run_details": []}) for r in report.results]})


def test_a_report_read_without_run_details_has_every_other_field() -> None:
    """What ``farm compare`` reads (issue 45): the run details skipped unparsed, nothing else lost."""
    report = sample_report()
    text = render_json(report)
    assert json_report.without_run_details(text.encode()) is not None
    assert parse_json_report(text, details=False) == _without_details(report)
    assert parse_json_report(text.encode(), details=False) == _without_details(report)


def test_a_report_in_another_layout_is_read_whole() -> None:
    report = sample_report()
    compact = json.dumps(json.loads(render_json(report)))
    assert json_report.without_run_details(compact.encode()) is None
    assert parse_json_report(compact, details=False) == report
    # a list that does not close where write_json closes it: not stripped across results
    closing = '\n      ],\n      "run_details_truncated"'
    reindented = render_json(report).replace(closing, closing.replace("],", "] ,"), 1)
    assert json_report.without_run_details(reindented.encode()) is None
    assert parse_json_report(reindented, details=False) == report


def test_a_broken_report_read_without_details_names_the_whole_files_line() -> None:
    text = render_json(sample_report())
    broken = text.replace('"runs_planned": ', '"runs_planned": ,', 1)
    with pytest.raises(InputError) as lean:
        parse_json_report(broken, "r.json", details=False)
    with pytest.raises(InputError) as whole:
        parse_json_report(broken, "r.json")
    assert str(lean.value) == str(whole.value)


@pytest.mark.parametrize("text", ["not json", "[]", '{"summary": {}}'])
def test_reading_something_else_is_an_input_error_naming_the_file(text: str) -> None:
    with pytest.raises(InputError, match=r"^old\.json: not a farm JSON report"):
        parse_json_report(text, "old.json")


def test_agent_strings_survive_unchanged() -> None:
    case = Case(id='quote " \\ \u2028 é', format="yao", turns=[], input="</script>")
    report = build_report([_stats(case, ["passed"], 1, output="\x00 ctrl")], duration_ms=1,
                          runs_per_case=1, environment={}, metadata={})
    doc = json.loads(render_json(report))
    assert doc["results"][0]["id"] == 'quote " \\ \u2028 é'
    assert doc["results"][0]["output"] == "\x00 ctrl"
