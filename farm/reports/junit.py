"""JUnit XML for CI systems: a ``<testsuite>`` per suite, a ``<testcase>`` per case.

A case whose verdict failed gets ``<failure>`` listing the failing checks of its kept runs, or
``<error>`` when every failing run was an agent error or timeout; a skipped case (listed in
``summary.skipped_ids``) gets ``<skipped/>`` in a ``skipped`` suite. Times are summed run times,
the overall one the total of the suites'. Built with ElementTree
(escaping for free); characters XML 1.0 forbids are stripped from every string first.
"""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from typing import Any, TextIO

from farm.models import CaseStats, RunDetail, SweepReport
from farm.models.quarantine import badge, is_quarantined
from farm.reports.criteria import failing_text
from farm.reports.details import RunDetailsSource, with_details
from farm.reports.failed_runs import failed_run, failing_runs
from farm.reports.fleet import adaptive_text, budget_text, cost_text
from farm.reports.trajectory import trajectory_properties
from farm.stats import case_verdict

MAX_TEXT = 8192
"""Characters of ``<failure>``/``<error>``/``<system-out>`` text per case."""

_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(value: Any) -> str:
    """``value`` as text holding only characters XML 1.0 allows."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return _ILLEGAL_XML.sub("", text)


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.3f}"


def _case_ms(stats: CaseStats) -> float:
    return stats.avg_duration_ms * (stats.runs - stats.skipped)


def _properties(parent: ET.Element, values: dict[str, Any]) -> None:
    props = ET.SubElement(parent, "properties")
    for name, value in values.items():
        if value is not None:
            ET.SubElement(props, "property", name=name, value=xml_safe(value if isinstance(value, str)
                                                                        else json.dumps(value)))


def _describe(detail: RunDetail) -> list[str]:
    run = failed_run(detail)
    head = f"run {run.head}"
    if run.error is not None:
        return [f"{head}: {run.error}"]
    lines = [head]
    for check in run.checks:
        line = f"  {check.name}: {check.message}"
        if check.shows_values:
            line += f" (expected {json.dumps(check.expected, default=str)}, "
            line += f"actual {json.dumps(check.actual, default=str)})"
        lines.append(line)
    return lines


def _agent_only(stats: CaseStats) -> bool:
    """Every failing run was an agent error or timeout (no check ever failed)."""
    return stats.failed > 0 and stats.failed == stats.errors + stats.timeouts


def _runs_summary(stats: CaseStats) -> str:
    return f"{stats.passed} of {stats.runs - stats.skipped} runs passed, {stats.required_passes} required"


def _quarantined_message(stats: CaseStats) -> str:
    """``<skipped>``'s message for a quarantined case: its badge and its figures."""
    low, high = stats.pass_rate_ci
    return f"{badge(stats)}: {_runs_summary(stats)}, pass rate {stats.pass_rate:g}% (95% CI {low:g}-{high:g})"


def _problem(case: ET.Element, stats: CaseStats) -> None:
    failing = failing_runs(stats)
    summary = _runs_summary(stats)
    agent_only = _agent_only(stats)
    first = next((d for d in failing if d.error or d.failed_checks), None)
    reason = ""
    if first is not None:
        reason = first.error or "; ".join(f"{c.name}: {c.message}" for c in first.failed_checks)
    text = "\n".join(line for d in failing for line in _describe(d))
    if stats.run_details_truncated:
        text += f"\n({stats.run_details_truncated} runs not kept)"
    kind = "error" if agent_only else "failure"
    kind_type = ("timeout" if stats.errors == 0 else "error") if agent_only else "failed"
    criteria = failing_text(stats)
    summary += f"; {criteria}" if criteria else ""
    message = xml_safe(f"{summary}: {reason}" if reason else summary)[:MAX_TEXT]
    elem = ET.SubElement(case, kind, message=message, type=kind_type)
    elem.text = xml_safe(text)[:MAX_TEXT]


def _testcase(stats: CaseStats) -> ET.Element:
    case = ET.Element("testcase", name=xml_safe(stats.id),
                      classname=xml_safe(stats.suite or "farm"), time=_seconds(_case_ms(stats)))
    _properties(case, {
        "pass_rate": stats.pass_rate, "pass_rate_ci": list(stats.pass_rate_ci),
        "consistency": stats.consistency, "stability_class": stats.stability_class.value,
        "label": stats.label, "runs": stats.runs, "required_passes": stats.required_passes,
        "cost_usd": cost_text(stats.cost_usd), "cost_per_passing_run": cost_text(stats.cost_per_passing_run),
        **({"adaptive": adaptive_text(stats), "runs_planned": stats.runs_planned} if stats.adaptive else {}),
        **({"quarantine": badge(stats)} if stats.quarantine else {}),
        **({"semantic_consistency": stats.semantic_consistency} if stats.semantic_consistency is not None else {}),
        **trajectory_properties(stats),
        "served": None if stats.served is None else stats.served.model_dump(),  # SPEC 25
        "load_bias": None if stats.load_bias is None else stats.load_bias.model_dump(exclude={"in_flight"}),
    })
    verdict = _junit_verdict(stats)
    if verdict == "quarantined":  # runs and is reported, but CI stays green as the exit code does
        ET.SubElement(case, "skipped", message=xml_safe(_quarantined_message(stats)))
    elif verdict == "skipped":
        ET.SubElement(case, "skipped", message="skipped")
    elif verdict == "failed":
        _problem(case, stats)
    shown = next((d for d in stats.run_details if d.output is not None), None)
    if shown is not None:
        ET.SubElement(case, "system-out").text = xml_safe(shown.output)[:MAX_TEXT]
    return case


def _junit_verdict(stats: CaseStats) -> str:
    return "quarantined" if is_quarantined(stats) else case_verdict(stats)


def _suite_counts(cases: list[CaseStats]) -> dict[str, str]:
    verdicts = [_junit_verdict(s) for s in cases]
    agent_only = [_agent_only(s) for s in cases]
    failed = [v == "failed" for v in verdicts]
    return {
        "tests": str(len(cases)),
        "failures": str(sum(f and not a for f, a in zip(failed, agent_only, strict=True))),
        "errors": str(sum(f and a for f, a in zip(failed, agent_only, strict=True))),
        "skipped": str(verdicts.count("skipped") + verdicts.count("quarantined")),
        "time": _seconds(sum(_case_ms(s) for s in cases)),
    }


SKIPPED_SUITE = "skipped"
"""Skipped cases have no statistics (SPEC 10), their suite included: they sit in a suite of their own."""


def _skipped_suite(root: ET.Element, ids: list[str], report: SweepReport) -> None:
    suite = ET.SubElement(root, "testsuite", {
        "name": SKIPPED_SUITE, "tests": str(len(ids)), "failures": "0", "errors": "0", "skipped": str(len(ids)),
        "time": "0.000", "timestamp": xml_safe(report.envelope.started_at or ""),
        "hostname": xml_safe(_hostname(report)),
    })
    for case_id in ids:
        case = ET.SubElement(suite, "testcase", name=xml_safe(case_id), classname=SKIPPED_SUITE, time="0.000")
        _properties(case, {"label": "skipped"})
        ET.SubElement(case, "skipped", message="skip: true in the suite")


def _hostname(report: SweepReport) -> str:
    """The ``hostname`` a caller's metadata gives (``SweepEnvelope.hostname``), else ``localhost``."""
    return report.envelope.hostname or "localhost"


def _fleet(report: SweepReport) -> dict[str, Any]:
    """The sweep's cost (``unknown`` when it is), judge cost, runs saved and budget as properties."""
    s = report.summary
    budget = report.outcome.budget
    return {"cost_usd": cost_text(s.cost_usd), "cost_per_passing_run": cost_text(s.cost_per_passing_run),
            "judge_cost_usd": cost_text(s.judge_cost_usd) if s.judge_usage is not None else None,
            "runs_saved": s.runs_saved if report.envelope.adaptive else None,
            "budget": budget_text(budget) if budget is not None else None}


def _semantic_not_computed(report: SweepReport) -> str | None:
    """Why the semantic figures are missing (``off``, ``not_installed``, ``not_text``); None when
    computed (each case's ``semantic_consistency`` says so) or when no case answered."""
    status = report.summary.semantic
    return None if status in (None, "computed") else status


_CASE = "farm-case"
"""Where each ``<testcase>`` goes in the rendered skeleton: data never makes ``<!--`` (escaped)."""
_CASE_LEVEL = 2
"""A ``<testcase>``'s depth: ``testsuites`` > ``testsuite`` > ``testcase``."""


def _suites(results: list[CaseStats]) -> dict[str, list[CaseStats]]:
    """The cases of each ``<testsuite>``: a suite's, and a matrix's arms a suite each (SPEC 22)."""
    suites: dict[str, list[CaseStats]] = {}
    for stats in results:
        name = stats.suite or "farm"
        suites.setdefault(f"{name} [{stats.arm}]" if stats.arm else name, []).append(stats)
    return suites


def _suite_properties(report: SweepReport) -> dict[str, Any]:
    """What every ``<testsuite>`` carries of the sweep: who ran what, how it ended, and its typed
    sections (SPEC 25: served models, load bias, ramp)."""
    meta, summary = report.envelope, report.summary
    return {"sweep_id": meta.sweep_id, "agent_id": meta.agent_id, "connector": meta.connector,
            "comparison": meta.comparison, "min_pass_rate": meta.min_pass_rate,
            "stopped": report.outcome.stopped, **_fleet(report), "semantic": _semantic_not_computed(report),
            "served": None if summary.served is None else summary.served.model_dump(),
            "load_bias": None if summary.load_bias is None else summary.load_bias.model_dump(),
            "ramp": None if summary.ramp is None else summary.ramp.model_dump()}


def write_junit(report: SweepReport, out: TextIO, details: RunDetailsSource | None = None) -> None:
    """The report as JUnit XML, written to ``out`` one ``<testcase>`` at a time (each case's run
    details from ``details`` when given): the tree is built and indented with a placeholder per
    case, and each case is built, indented at its depth and written in its place."""
    meta = report.envelope
    suites = _suites(report.results)
    skipped = report.summary.skipped_ids
    counts = _suite_counts(report.results)
    counts["tests"] = str(int(counts["tests"]) + len(skipped))
    counts["skipped"] = str(int(counts["skipped"]) + len(skipped))
    root = ET.Element("testsuites", {"name": "agent-farm", **counts})
    # the total of its suites, as a suite's is the total of its cases (summed run time): the sweep's
    # wall clock is shorter when runs overlap, and an overall time below a suite's reads as a bug
    root.set("time", _seconds(sum(_case_ms(s) for s in report.results)))
    arms = {arm.name: arm.agent for arm in report.arms or ()}
    for name, cases in suites.items():
        suite = ET.SubElement(root, "testsuite", {
            "name": xml_safe(name), **_suite_counts(cases),
            "timestamp": xml_safe(meta.started_at or ""),
            "hostname": xml_safe(_hostname(report)),
        })
        agent = arms.get(cases[0].arm or "", report.envelope.agent_id)  # a matrix arm's suite: its own agent
        _properties(suite, {**_suite_properties(report), "agent_id": agent, "arm": cases[0].arm})
        for _ in cases:
            suite.append(ET.Comment(_CASE))
    if skipped:
        _skipped_suite(root, skipped, report)
    ET.indent(root)
    pieces = iter(ET.tostring(root, encoding="unicode").split(f"<!--{_CASE}-->"))
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n' + next(pieces))
    ordered = (stats for cases in suites.values() for stats in cases)
    for stats, piece in zip(with_details(ordered, details), pieces, strict=True):
        case = _testcase(stats)
        ET.indent(case, level=_CASE_LEVEL)
        out.write(ET.tostring(case, encoding="unicode") + piece)
    out.write("\n")


def render_junit(report: SweepReport) -> str:
    """The report as JUnit XML text."""
    out = io.StringIO()
    write_junit(report, out)
    return out.getvalue()
