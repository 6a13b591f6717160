"""Tests of farm.reports.markdown: Yao's layout, and agent strings that try to break it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from farm.models import Case, CaseStats, CheckOutcome, ErrorInfo, RunResult, RunStatus, SweepReport
from farm.reports.markdown import md_fence, md_inline, render_markdown
from farm.stats import CaseAccumulator, CasePlan, build_report

PARSER = MarkdownIt("commonmark").enable("table")

EVIL = "a | b <script>alert(1)</script> [x](javascript:alert(1)) ![i](http://e/x.png) *em* `code` &amp;\n# h"
FENCES = "```\n~~~\n````` still inside"


def _stats(case: Case, runs: list[tuple[str, Any]], required: int) -> CaseStats:
    acc = CaseAccumulator(case, CasePlan(runs=len(runs), required=required))
    for n, (status, output) in enumerate(runs, 1):
        checks = [CheckOutcome(name="contains|x", passed=False, message=EVIL, expected="AI", actual=output)]
        acc.add(RunResult(
            case_id=case.id, run=n, status=RunStatus(status), duration_ms=234.0, output=output,
            checks=checks if status == "failed" else [],
            error=ErrorInfo(type="AgentError", message=EVIL) if status == "error" else None))
    return acc.stats()


def sample_report(runs_per_case: int = 3) -> SweepReport:
    cases = [
        _stats(Case(id="T001", format="yao", turns=[], input="Hello", expected={"k": 1}),
               [("passed", {"k": 1})] * runs_per_case, runs_per_case),
        _stats(Case(id=EVIL, format="yao", turns=[], input={"q": FENCES}),
               [("failed", FENCES), ("error", None), ("passed", EVIL)][:runs_per_case], runs_per_case),
        _stats(Case(id="T003", format="yao", turns=[], skip=True), [("skipped", None)], 0),
    ]
    return build_report(cases, duration_ms=12_345, runs_per_case=runs_per_case,
                        environment={"user_id": "test-user", "team_id": "te|am", "locale": "en-us"},
                        metadata={"agent_id": "keyword", "connector": "deepseek.v3", "comparison": "documented"})


def _walk(tokens: list[Token]) -> list[Token]:
    out = []
    for token in tokens:
        out.append(token)
        out += _walk(token.children or [])
    return out


def test_layout_follows_yao() -> None:
    text = render_markdown(sample_report())
    assert text.startswith("# Agent Test Report\n\n## Summary\n")
    for row in ("| Agent | keyword |", "| Connector | deepseek.v3 |", "| Total | 3 |", "| Passed | 1 |",
                "| Failed | 1 |", "| Skipped | 1 |", "| Pass Rate | 66.7% |", "| Duration | 12.3s |",
                "| Comparison | documented |", "| User | test-user |", "| Locale | en-us |"):
        assert row in text, row
    assert "## Environment" in text and "## Stability" in text and "## Results" in text
    assert "### ✅ T001 - Passed (234ms)" in text
    assert "## Skipped\n\n1 case, skipped by the suite:\n\n- T003\n" in text  # listed apart (SPEC 10)
    assert "| T001 | 3 | 100.0% | 43.8–100.0% | 1.000 | stable | stable |" in text


def test_stability_table_only_with_several_runs() -> None:
    text = render_markdown(sample_report(runs_per_case=1))
    assert "## Stability" not in text
    assert "### ❌" in text and "Runs:" not in text.split("### ❌")[0].split("## Results")[1]


def test_failures_list_failed_checks_and_errors() -> None:
    text = render_markdown(sample_report())
    failed_section = text.split("### ❌")[1]
    assert "- Run 1 (failed, 234ms) · assertion:contains\\|x, turn 1\n" in failed_section
    assert "**contains\\|x**" in failed_section
    assert "- Run 2 (error, 234ms) · crashed, turn 1: " in failed_section
    assert "| assertion:contains\\|x | 1 | run 1, turn 1: contains\\|x: " in failed_section
    assert "Runs: 1/3 passed (33.3%), 3 required; flaky" in failed_section


def test_agent_strings_cannot_inject_markup() -> None:
    tokens = _walk(PARSER.parse(render_markdown(sample_report())))
    kinds = {t.type for t in tokens}
    assert not kinds & {"html_inline", "html_block", "link_open", "image", "em_open", "code_inline"}
    # Every table keeps its shape: each row has as many cells as its header.
    rows = [t for t in tokens if t.type == "tr_open"]
    assert rows
    html = PARSER.render(render_markdown(sample_report()))
    assert "<script>" not in html
    for table in html.split("<table>")[1:]:
        body = table.split("</table>")[0]
        widths = {row.count("<td") + row.count("<th") for row in body.split("<tr>")[1:]}
        assert len(widths) == 1, widths
    # The heading of the evil case is one heading holding the whole id as text.
    headings = [t for t in tokens if t.type == "inline" and "alert(1)" in t.content and t.map]
    assert any("javascript:alert(1)" in "".join(c.content for c in (t.children or [])) for t in headings)


def test_fenced_blocks_hold_backtick_runs_verbatim() -> None:
    tokens = PARSER.parse(render_markdown(sample_report()))
    fences = [t.content for t in tokens if t.type == "fence"]
    assert FENCES + "\n" in fences  # the failed run's output, inside a longer fence
    assert any(FENCES.replace("\n", "\\n") in f for f in fences)  # the input, as JSON


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("`~ ab\n|<>*_[]#")), max_size=60))
def test_md_fence_always_yields_one_block_with_the_text(text: str) -> None:
    tokens = PARSER.parse(md_fence(text))
    assert [t.type for t in tokens] == ["fence"]
    assert tokens[0].content == text + "\n"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("`*_[]()<>|#!~&\\ab \n-+=.:;1")), max_size=40))
def test_md_inline_renders_as_its_own_plain_text(text: str) -> None:
    tokens = _walk(PARSER.parse(f"| {md_inline(text)} |\n| --- |\n"))
    kinds = {t.type for t in tokens}
    assert kinds <= {"table_open", "thead_open", "tr_open", "th_open", "inline", "text", "th_close",
                     "tr_close", "thead_close", "table_close"}
    cell = "".join(t.content for t in tokens if t.type == "text")
    assert cell == " ".join(text.split())
