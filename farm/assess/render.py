"""An assessment as text (neuro-san's Assessor layout), JSON (SPEC 14.3) and Markdown.

The text keeps the Assessor's lines per case — ``Testing …:``, ``p/t attempts passed.``,
``f/t attempts failed.``, ``Modes of failure:``, ``c/f failures (pct%):``, ``Failure Mode:``, the
examples and the acceptance criteria — with at most ``MAX_EXAMPLES`` examples per mode (the rest
counted), and a closing list of the modes no earlier assessment of the case had seen.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

from farm.assess.models import Assessment, CaseAssessment
from farm.reports.markdown import md_fence, md_inline

__all__ = ["render_assessment_json", "render_assessment_markdown", "render_assessment_text"]

ONE_ATTEMPT = "There was only one test attempt done. Consider setting 'success_ratio' on your test case hocon."


def _distinct(samples: Iterable[str]) -> list[tuple[str, int]]:
    """Each distinct sample once, in first-seen order, with how many examples were alike."""
    return list(Counter(samples).items())  # a Counter keeps insertion order


def _case_text(case: CaseAssessment) -> list[str]:
    failed = sum(m.count for m in case.modes)
    lines = [f"Testing {case.id}:", f"{case.runs - failed}/{case.runs} attempts passed."]
    if case.runs == 1:
        lines.append(ONE_ATTEMPT)
    if not failed:
        return lines
    lines += [f"{failed}/{case.runs} attempts failed.", "Modes of failure:"]
    for mode in case.modes:
        lines += ["", f"{mode.count}/{failed} failures ({100.0 * mode.count / failed:.2f}%):", "Failure Mode:",
                  mode.mode]
        for index, (sample, alike) in enumerate(_distinct(e.sample.strip() for e in mode.examples), start=1):
            runs = f" ({alike} runs gave this)" if alike > 1 else ""
            lines += ["", f"    Example {index}{runs}:", f"    {sample}"]
        if mode.count > len(mode.examples):
            lines += ["", f"    … and {mode.count - len(mode.examples)} more"]
        lines += ["", "    Acceptance Criteria:", f"    {mode.examples[0].criteria.strip()}"]
    return lines


def render_assessment_text(assessment: Assessment) -> str:
    """What ``farm assess`` prints."""
    blocks = ["\n".join(_case_text(case)) for case in assessment.cases]
    new = [(case.id, mode.mode) for case in assessment.cases for mode in case.modes if mode.new]
    if new:
        blocks.append("\n".join(["New failure modes:", *(f"    {case_id}: {mode}" for case_id, mode in new)]))
    return "\n\n".join(blocks) + "\n"


def render_assessment_json(assessment: Assessment) -> str:
    """``{"cases": [{"id", "runs", "passed", "modes": [{"mode", "count", "share", "failure_classes",
    "examples"}]}]}`` plus the judge and what was assessed."""
    return json.dumps(assessment.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def _case_markdown(case: CaseAssessment) -> list[str]:
    failed = sum(m.count for m in case.modes)
    lines = [f"## {md_inline(case.id)}", "", f"{case.runs - failed}/{case.runs} attempts passed, {failed} failed"
             + (f", {case.judge_calls} judge calls." if case.judge_calls else ".")]
    for mode in case.modes:
        marker = " (new)" if mode.new else ""
        lines += ["", f"### {mode.count}/{failed} failures ({100.0 * mode.count / failed:.1f}%){marker}", "",
                  md_inline(mode.mode), "", f"Failure classes: {md_inline(', '.join(mode.failure_classes))}", "",
                  "Acceptance criteria:", "", md_fence(mode.examples[0].criteria), ""]
        for example in mode.examples:
            turn = f", turn {example.turn}" if example.turn else ""
            lines += [f"- Run {example.run}{turn} ({md_inline(example.failure_class)}):", "",
                      md_fence(example.sample), ""]
    return lines


def render_assessment_markdown(assessment: Assessment) -> str:
    """The assessment as Markdown: a section per case, a sub-section per mode."""
    judge = md_inline(assessment.judge) if assessment.judge else "none (modes are the failure classes)"
    lines = ["# Failure modes", "", f"Judge: {judge}"]
    for case in assessment.cases:
        lines += ["", *_case_markdown(case)]
    return "\n".join(lines).rstrip("\n") + "\n"
