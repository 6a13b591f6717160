"""Adaptive runs and costs in the statistics and in every report (SPEC 13), on plain data: the
accumulator's decisions, the in-process run order, costs summed with unknown kept unknown, and
what the terminal, Markdown, JUnit, the summary and the HTML page (in Chromium) show."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from farm.models import Case, Message, RunResult, RunStatus, Turn
from farm.plan.sweep_plan import PlannedCase, SweepPlan
from farm.reports.junit import render_junit
from farm.reports.markdown import render_markdown
from farm.reports.summary import render_summary
from farm.stats import CaseAccumulator, CasePlan, build_report
from farm.stats.adaptive import AdaptiveRule, Curtailment, Sprt, runs_needed
from farm.sweep.adaptive import AdaptiveQueue
from farm.sweep.lifecycle import StopReason, SweepStop


def case(case_id: str = "c") -> Case:
    return Case(id=case_id, format="yao", turns=[Turn(messages=[Message(content="x")])])


def result(case_id: str, run: int, passed: bool, **fields: Any) -> RunResult:
    status = RunStatus.PASSED if passed else RunStatus.FAILED
    return RunResult(case_id=case_id, run=run, status=status, duration_ms=10.0, **fields)


def accumulate(plan: CasePlan, outcomes: list[bool], case_id: str = "c", **fields: Any) -> CaseAccumulator:
    acc = CaseAccumulator(case(case_id), plan)
    for run, passed in enumerate(outcomes, start=1):
        acc.add(result(case_id, run, passed, **fields))
    return acc


# ------------------------------------------------------------------------------ adaptive statistics


def test_a_curtailed_case_reports_its_decision_runs_saved_and_keeps_runs_in_flight() -> None:
    plan = CasePlan(runs=20, required=16, adaptive=AdaptiveRule())
    acc = accumulate(plan, [False] * 5)  # the 5th failure: 16 passes of 20 are out of reach
    assert acc.decision is not None and (acc.decision.verdict, acc.decision.decided_after) == ("fail", 5)
    assert acc.runs_needed() == 0 and acc.cannot_pass
    acc.add(result("c", 6, True))  # in flight when the case was decided: it counts, the verdict stays
    stats = acc.stats()
    assert (stats.runs, stats.runs_planned, stats.decided_after, stats.runs_saved) == (6, 20, 5, 14)
    assert stats.adaptive and stats.adaptive_verdict == "fail" and not stats.case_passed


def test_a_sequential_verdict_wins_over_the_pass_count() -> None:
    plan = CasePlan(runs=40, required=40, adaptive=AdaptiveRule("sequential", 0.5, 0.9, 0.05, 0.1))
    stats = accumulate(plan, [True] * 5).stats()
    assert (stats.adaptive_verdict, stats.case_passed, stats.decided_after) == ("pass", True, 5)
    undecided = accumulate(CasePlan(runs=3, required=3, adaptive=plan.adaptive), [True] * 3).stats()
    assert (undecided.adaptive_verdict, undecided.case_passed) == ("inconclusive", False)


def test_the_default_sprt_tests_the_cases_own_requirement() -> None:
    rule = AdaptiveRule("sequential").rule_for(runs=50, required=40)
    assert isinstance(rule, Sprt) and (rule.p1, rule.p0, rule.alpha, rule.beta) == (0.8, pytest.approx(0.6), 0.05, 0.1)
    assert isinstance(AdaptiveRule("sequential").rule_for(runs=5, required=0), Curtailment)  # nothing required


@pytest.mark.parametrize("rule", [Curtailment(12, 9), Curtailment(5, 0), Curtailment(6, 6),
                                  Sprt(0.5, 0.9, 0.05, 0.1, 30), Sprt(0.0, 0.5, 0.05, 0.05, 12)])
def test_runs_needed_is_the_fewest_runs_that_could_decide(rule: Any) -> None:
    for passed, failed in itertools.product(range(rule.runs + 1), repeat=2):
        if passed + failed > rule.runs or rule.decide(passed, failed) is not None:
            continue
        needed = runs_needed(rule, passed, failed)
        assert needed >= 1
        for p in range(needed):  # fewer runs, however they turn out, decide nothing
            assert rule.decide(passed + p, failed + needed - 1 - p) is None
        assert rule.decide(passed + needed, failed) or rule.decide(passed, failed + needed)


def test_a_skipped_case_has_no_adaptive_rule() -> None:
    from farm.stats import plan_case

    skipped = case().model_copy(update={"skip": True})
    assert plan_case(skipped, 20, 1.0, AdaptiveRule()).adaptive is None
    assert plan_case(case(), 20, 0.9, AdaptiveRule()) == CasePlan(20, 18, AdaptiveRule())


# ------------------------------------------------------------------------------ in-process run order


def _queue(plans: dict[str, CasePlan], stop: SweepStop | None = None
           ) -> tuple[AdaptiveQueue, dict[str, CaseAccumulator]]:
    from farm.agents.resolve import AgentRef

    planned = [PlannedCase(case=case(cid), plan=p, agent=AgentRef("python", "m:f")) for cid, p in plans.items()]
    accs = {c.id: CaseAccumulator(c.case, c.plan) for c in planned}
    return AdaptiveQueue(planned, accs, stop or SweepStop()), accs


def test_runs_go_where_they_are_certainly_needed_then_on_speculation_and_never_to_a_decided_case() -> None:
    rule = AdaptiveRule()
    queue, accs = _queue({"a": CasePlan(10, 10, rule), "b": CasePlan(10, 8, rule), "c": CasePlan(4, 1, rule)})
    runs = queue.runs()
    # a needs 1 run before it could decide (a failure would), b 3 (three failures), c 1 (a pass)
    assert [(p.id, r) for p, r in itertools.islice(runs, 5)] == [("a", 1), ("b", 1), ("b", 2), ("b", 3), ("c", 1)]
    assert next(runs)[0].id == "a"  # every case has what it needs in flight: speculate on the least busy
    queue.finished("c")
    accs["c"].add(result("c", 1, True))  # c is decided: pass
    assert queue.settled("c")
    queue.finished("a")
    accs["a"].add(result("a", 1, False))  # a is decided: fail (its run 2 is still in flight)
    assert not queue.settled("a")
    started = [p.id for p, _ in runs]
    assert "c" not in started and "a" not in started and started.count("b") == 10 - 3


def test_a_stop_request_ends_the_run_order() -> None:
    stop = SweepStop()
    queue, _ = _queue({"a": CasePlan(10, 5, AdaptiveRule())}, stop)
    runs = queue.runs()
    next(runs)
    stop.request(StopReason.BUDGET)
    assert list(runs) == []


# ------------------------------------------------------------------------------------- costs


def test_case_and_sweep_costs_stay_unknown_when_any_part_is() -> None:
    priced = accumulate(CasePlan(2, 2), [True, True], "priced", usage={"input_tokens": 10, "output_tokens": 2},
                        cost_usd=0.01, judge_usage={"input_tokens": 5}, judge_cost_usd=0.002).stats()
    assert priced.usage == {"input_tokens": 20, "output_tokens": 4} and priced.cost_usd == pytest.approx(0.02)
    assert priced.judge_cost_usd == pytest.approx(0.004)
    assert priced.cost_per_passing_run == pytest.approx(0.012)  # (agent + judges) / passing runs
    acc = accumulate(CasePlan(2, 1), [True], "mixed", usage={"input_tokens": 1}, cost_usd=0.5)
    acc.add(result("mixed", 2, False))  # no usage, no cost reported: unknown
    mixed = acc.stats()
    assert mixed.cost_usd is None and mixed.cost_per_passing_run is None and mixed.judge_usage is None
    report = build_report([priced, mixed], duration_ms=1, runs_per_case=2, environment={}, metadata={})
    assert report.summary.cost_usd is None and report.summary.usage == {"input_tokens": 21, "output_tokens": 4}
    assert report.summary.judge_cost_usd == pytest.approx(0.004)
    alone = build_report([priced], duration_ms=1, runs_per_case=2, environment={}, metadata={})
    assert alone.summary.cost_usd == pytest.approx(0.02)


# ------------------------------------------------------------------------------------ reports


def adaptive_report() -> Any:
    rule = AdaptiveRule()
    decided = accumulate(CasePlan(20, 16, rule), [False] * 5, "decided", usage={"input_tokens": 100},
                         cost_usd=0.0123).stats()
    passing = accumulate(CasePlan(20, 2, rule), [True, True], "passing", usage={"input_tokens": 50}, cost_usd=None,
                         judge_usage={"input_tokens": 7}, judge_cost_usd=None).stats()
    meta = {"agent_id": "agent", "adaptive": "exact",
            "budget": {"max_usd": 1.0, "max_tokens": None, "spent_usd": 0.0123, "spent_tokens": 100}}
    return build_report([decided, passing], duration_ms=5, runs_per_case=20, environment={}, metadata=meta)


def test_markdown_marks_biased_pass_rates_and_shows_costs_and_unknowns() -> None:
    text = render_markdown(adaptive_report())
    assert "| Runs saved (adaptive) | 33 |" in text and "| Cost | unknown |" in text
    assert "| Budget | $0.0123 of $1.00 spent |" in text
    assert "| decided | 5/20 | 0.0%\\* |" in text and "\\* adaptive: runs stopped once the verdict" in text
    assert "Adaptive: decided fail after 5 runs, 15 saved of 20 planned (biased: adaptive)" in text
    assert "Cost: $0.0615; Tokens: 500 in; Cost per passing run: unknown" in text  # nothing passed
    assert "Cost: unknown; Tokens: 100 in; Judge cost: unknown; Judge tokens: 14 in; Cost per passing run: unknown" \
        in text


def test_junit_summary_and_terminal_show_costs_and_runs_saved() -> None:
    from rich.console import Console

    from farm.cli.console import print_summary

    report = adaptive_report()
    root = ET.fromstring(render_junit(report))
    props = {p.attrib["name"]: p.attrib["value"] for p in root.find("testsuite/properties")}  # type: ignore[union-attr]
    assert (props["cost_usd"], props["runs_saved"], props["budget"]) == ("unknown", "33", "$0.0123 of $1.00 spent")
    case_props = {p.attrib["name"]: p.attrib["value"] for p in root.find("testsuite/testcase/properties")}  # type: ignore[union-attr]
    assert case_props["adaptive"] == "decided fail after 5 runs, 15 saved" and case_props["cost_usd"] == "$0.0615"
    assert render_summary(report).splitlines()[-1] == (
        "cost unknown; tokens 600 in; 33 runs saved by --adaptive; budget $0.0123 of $1.00 spent")
    console = Console(record=True, width=200)
    print_summary(console, report)
    shown = console.export_text()
    assert "decided  5/20      0.0%*" in shown and "* adaptive: runs stopped once the verdict was settled" in shown


def test_the_plan_carries_fleet_settings_through_json_and_no_secret() -> None:
    from farm.plan.fleet import BudgetLimit, FleetPlan, ReplayMode, ReplaySpec
    from farm.plan.rate_specs import RateLimit
    from farm.stats.prices import Price

    fleet = FleetPlan(limits={"*": RateLimit(requests_per_s=10.0, concurrency=4)}, budget=BudgetLimit(2.0, None),
                      prices={"local.llm": Price(1.0, 2.0)}, metered=["local.llm"], adaptive=AdaptiveRule(),
                      replay=ReplaySpec("/shared/calls", ReplayMode.REPLAY))
    plan = SweepPlan.model_validate({"sweep_id": "s", "env": {}, "options": {"cwd": "/", "agents_root": "/a",
                                     "connectors_root": "/c"}, "agent_label": "a", "total_cases": 0,
                                     "total_runs": 0, "runs_per_case": 1, "max_case_timeout_s": 1.0,
                                     "fleet": fleet.model_dump(mode="json")})
    assert SweepPlan.model_validate_json(plan.model_dump_json()).fleet == fleet
    assert set(fleet.model_dump()) == {"limits", "declared", "budget", "prices", "agent_keys", "unmetered", "metered",
                                       "adaptive", "replay", "judge_cache", "max_queue_wait_s"}  # no key, no URL


@pytest.mark.browser
def test_the_html_page_marks_biased_rates_and_shows_costs(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from farm.reports.html import render_html
    from tests.support.browser_fixtures import headless_chromium

    path = tmp_path / "report.html"
    path.write_text(render_html(adaptive_report()), encoding="utf-8")
    with headless_chromium() as chromium:
        page = chromium.new_page()
        page.goto(path.as_uri())
        page.wait_for_selector("html[data-ready]")
        expect(page.locator(".card", has_text="Runs saved")).to_contain_text("33")
        expect(page.locator(".card", has_text="Cost").first).to_contain_text("unknown")
        row = page.locator("#rows tr.case-row", has_text="decided")
        expect(row).to_contain_text("biased: adaptive")
        expect(row).to_contain_text("of 20 planned")
        row.click()
        details = page.locator("tr.detail-row .facts")
        expect(details).to_contain_text("decided fail after 5 runs, 15 saved")
        expect(details).to_contain_text("Requirement16 of 20 passes needed")
        expect(details).to_contain_text("Cost$0.0615")
        expect(details).to_contain_text("Cost per passing rununknown")


@pytest.mark.parametrize(("usd", "shown"), [(None, "unknown"), (0.0, "$0"), (0.5, "$0.500"), (0.0123, "$0.0123"),
                                            (6.45e-06, "$0.00000645"), (1234.567, "$1,234.57")])
def test_costs_read_as_money_and_unknown_as_unknown(usd: float | None, shown: str) -> None:
    from farm.reports.fleet import cost_text

    assert cost_text(usd) == shown


def test_a_comparison_reads_adaptive_cases_from_the_report() -> None:
    from farm.stats.compare import snapshot_of

    report = adaptive_report()
    assert [c.adaptive for c in snapshot_of(report).cases] == [True, True]
    report = report.model_copy(update={"envelope": report.envelope.updated(fleet=None)})  # no metadata.adaptive
    assert [c.adaptive for c in snapshot_of(report).cases] == [True, True]  # the case's own flag is enough
    plain = build_report([accumulate(CasePlan(2, 2), [True, True]).stats()], duration_ms=1, runs_per_case=2,
                         environment={}, metadata={})
    assert [c.adaptive for c in snapshot_of(plain).cases] == [False]
