"""Tests of farm.reports.junit: the JUnit XML shape CI systems read, and escaping."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from farm.models import Case, CaseStats, CheckOutcome, ErrorInfo, RunResult, RunStatus, SweepReport
from farm.reports.junit import render_junit
from farm.semantic import missing_requirement
from farm.stats import CaseAccumulator, CasePlan, build_report

EVIL_ID = 'T<script>alert("x")</script> & \x00\x1b co'
EVIL_TEXT = "fails & <b>bold</b> \x07\x0b\ufffe ]]> end"

# The common JUnit schema (Ant/Jenkins junit.xsd as read by CI tools): element → (required
# attributes, integer attributes, allowed children).
SCHEMA: dict[str, tuple[set[str], set[str], set[str]]] = {
    "testsuites": (set(), {"tests", "failures", "errors", "skipped"}, {"testsuite"}),
    "testsuite": ({"name", "tests", "failures", "errors", "time", "timestamp", "hostname"},
                  {"tests", "failures", "errors", "skipped"},
                  {"properties", "testcase", "system-out", "system-err"}),
    "properties": (set(), set(), {"property"}),
    "property": ({"name", "value"}, set(), set()),
    "testcase": ({"name", "classname", "time"}, set(),
                 {"properties", "skipped", "error", "failure", "system-out", "system-err"}),
    "failure": ({"message", "type"}, set(), set()),
    "error": ({"message", "type"}, set(), set()),
    "skipped": (set(), set(), set()),
    "system-out": (set(), set(), set()),
}


def _stats(case: Case, runs: list[str], required: int, output: Any = "out") -> CaseStats:
    acc = CaseAccumulator(case, CasePlan(runs=len(runs), required=required))
    for n, status in enumerate(runs, 1):
        checks = [CheckOutcome(name="contains", passed=False, message=EVIL_TEXT, expected="AI", actual=output)]
        error = {"error": ErrorInfo(type="AgentError", message="refused " + EVIL_TEXT),
                 "timeout": ErrorInfo(type="TimeoutError", message="timeout after 30s")}.get(status)
        acc.add(RunResult(case_id=case.id, run=n, status=RunStatus(status), duration_ms=250.0,
                          output=None if error else output, checks=checks if status == "failed" else [],
                          error=error))
    return acc.stats()


def sample_report() -> SweepReport:
    def case(case_id: str, suite: str, **kw: Any) -> Case:
        return Case(id=case_id, format="yao", turns=[], suite=suite, **kw)

    cases = [
        _stats(case("ok", "kw"), ["passed", "passed"], 2),
        _stats(case(EVIL_ID, "kw"), ["passed", "failed", "error"], 3, output=EVIL_TEXT),
        _stats(case("down", "net"), ["error", "error"], 1),
        _stats(case("slow", "net"), ["timeout"], 1),
        _stats(case("later", "net", skip=True), ["skipped"], 0),
        _stats(case("lenient", "net"), ["passed", "failed"], 1),
    ]
    return build_report(cases, duration_ms=2_500, runs_per_case=2, environment={},
                        metadata={"agent_id": "keyword", "sweep_id": "s-1", "started_at": "2024-12-17T10:00:00"})


def _check_schema(elem: ET.Element) -> None:
    required, integers, children = SCHEMA[elem.tag]
    assert required <= set(elem.attrib), (elem.tag, elem.attrib)
    for name in integers & set(elem.attrib):
        assert int(elem.attrib[name]) >= 0
    if "time" in elem.attrib:
        assert float(elem.attrib["time"]) >= 0
    for child in elem:
        assert child.tag in children, (elem.tag, child.tag)
        _check_schema(child)
    if elem.tag == "testcase":
        outcomes = [c.tag for c in elem if c.tag in ("skipped", "error", "failure")]
        assert len(outcomes) <= 1
        assert [c.tag for c in elem][:1] in (["properties"], [])  # properties come first


def _counts(elem: ET.Element) -> dict[str, int]:
    cases = list(elem.iter("testcase"))
    return {"tests": len(cases), **{k: sum(1 for c in cases if c.find(tag) is not None)
                                    for k, tag in (("failures", "failure"), ("errors", "error"),
                                                   ("skipped", "skipped"))}}


def test_document_follows_the_junit_schema() -> None:
    xml = render_junit(sample_report())
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    _check_schema(root)
    assert {k: int(root.attrib[k]) for k in _counts(root)} == _counts(root) == {
        "tests": 6, "failures": 1, "errors": 2, "skipped": 1}
    suites = root.findall("testsuite")
    # overall = its suites' total (issue 27: it was the wall clock, below a suite's time when runs overlap)
    assert float(root.attrib["time"]) == pytest.approx(sum(float(s.attrib["time"]) for s in suites), abs=0.002)
    assert [s.attrib["name"] for s in suites] == ["kw", "net", "skipped"]  # skipped cases have no suite stats
    for suite in suites:
        assert {k: int(suite.attrib[k]) for k in _counts(suite)} == _counts(suite)
        times = sum(float(c.attrib["time"]) for c in suite.iter("testcase"))
        assert float(suite.attrib["time"]) == pytest.approx(times, abs=0.002)
    assert _props(suites[0]) == {"agent_id": "keyword", "sweep_id": "s-1", "cost_usd": "unknown",
                                 "cost_per_passing_run": "unknown"}  # an unknown cost says so, never $0


def _props(elem: ET.Element) -> dict[str, str]:
    props = elem.find("properties")
    assert props is not None
    return {p.attrib["name"]: p.attrib["value"] for p in props}


def _case(root: ET.Element, name: str) -> ET.Element:
    found = [c for c in root.iter("testcase") if c.attrib["name"] == name]
    assert len(found) == 1
    return found[0]


def test_each_verdict_maps_to_its_element() -> None:
    root = ET.fromstring(render_junit(sample_report()))
    ok = _case(root, "ok")
    assert [c.tag for c in ok] == ["properties", "system-out"]
    assert (ok.attrib["classname"], ok.attrib["time"]) == ("kw", "0.500")
    assert _props(ok) == {"pass_rate": "100.0", "pass_rate_ci": "[34.2, 100.0]", "consistency": "1.0",
                     "stability_class": "stable", "label": "stable", "runs": "2", "required_passes": "2",
                     "cost_usd": "unknown", "cost_per_passing_run": "unknown",
                     # one distinct answer: one cluster of meaning, where the [semantic] extra is installed
                     **({"semantic_consistency": "1.0"} if missing_requirement() is None else {})}
    down = _case(root, "down").find("error")
    assert down is not None and down.attrib["type"] == "error"
    assert down.attrib["message"].startswith("0 of 2 runs passed, 1 required: refused fails")
    slow = _case(root, "slow").find("error")
    assert slow is not None and slow.attrib["type"] == "timeout"
    assert "timeout after 30s" in (slow.text or "")
    assert _case(root, "later").find("skipped") is not None
    lenient = _case(root, "lenient")  # one pass of two is enough: no failure element
    assert {c.tag for c in lenient} == {"properties", "system-out"}


def test_failure_lists_the_failing_checks_and_errors_of_a_mixed_case() -> None:
    root = ET.fromstring(render_junit(sample_report()))
    clean_id = 'T<script>alert("x")</script> &  co'
    failure = _case(root, clean_id).find("failure")
    assert failure is not None and failure.attrib["type"] == "failed"
    assert failure.attrib["message"].startswith("1 of 3 runs passed, 3 required: contains: fails & <b>bold</b>")
    lines = (failure.text or "").splitlines()
    assert lines[0] == "run 2 (failed, 250ms)"
    assert lines[1].startswith("  contains: fails & <b>bold</b>")
    assert lines[2].startswith("run 3 (error, 250ms): refused fails")


def test_agent_strings_are_escaped_and_illegal_characters_dropped() -> None:
    xml = render_junit(sample_report())
    assert "<script>" not in xml and "<b>" not in xml
    assert "&lt;script&gt;" in xml and "&amp;" in xml
    assert not any(ch in xml for ch in "\x00\x1b\x07\x0b\ufffe")
    root = ET.fromstring(xml)  # well-formed despite "]]>" and control characters
    out = _case(root, 'T<script>alert("x")</script> &  co').find("system-out")
    assert out is not None and out.text == "fails & <b>bold</b>  ]]> end"


def test_the_overall_time_is_never_below_a_suites() -> None:
    report = sample_report()
    report.summary.duration_ms = 1.0  # runs overlapped: the wall clock is shorter than the summed run time
    root = ET.fromstring(render_junit(report))
    suite_times = [float(s.attrib["time"]) for s in root.findall("testsuite")]
    assert float(root.attrib["time"]) >= max(suite_times) > 0.001


def test_a_hostname_given_in_the_metadata_names_the_suites_and_stays_in_the_json() -> None:
    report = sample_report()
    given = build_report(list(report.results), duration_ms=2_500, runs_per_case=2, environment={},
                         metadata={"agent_id": "keyword", "sweep_id": "s-1", "hostname": "ci-runner-7"})
    suites = ET.fromstring(render_junit(given)).iter("testsuite")
    assert {suite.get("hostname") for suite in suites} == {"ci-runner-7"}
    assert given.written_metadata()["hostname"] == "ci-runner-7"
    assert {s.get("hostname") for s in ET.fromstring(render_junit(report)).iter("testsuite")} == {"localhost"}
