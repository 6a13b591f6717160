"""Sweep-wide figures, the report every renderer takes, and the exit code."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Literal

from farm.errors import ExitCode
from farm.models import (
    CaseStats,
    RunStatus,
    ServedCounts,
    StabilityClass,
    SweepEnvelope,
    SweepOutcome,
    SweepReport,
    SweepSummary,
)
from farm.models.quarantine import is_quarantined, mark_quarantined
from farm.stats.costs import CostTotals
from farm.stats.failures import merge_failure_classes
from farm.stats.load_bias import flag_load_bias
from farm.stats.measures import percent
from farm.stats.retry_bias import flag_retry_bias, retry_bias_summary
from farm.stats.semantic import sweep_semantic_status

Verdict = Literal["passed", "failed", "skipped"]


def case_verdict(stats: CaseStats) -> Verdict:
    """``skipped`` when no run counted, else ``passed``/``failed`` by the case's requirement."""
    if stats.label == "skipped":
        return "skipped"
    return "passed" if stats.case_passed else "failed"


def _by_status(stats: Sequence[CaseStats]) -> dict[str, int]:
    counts = dict.fromkeys((s.value for s in RunStatus), 0)
    for s in stats:
        counts["passed"] += s.passed
        counts["failed"] += s.failed - s.errors - s.timeouts
        counts["error"] += s.errors
        counts["timeout"] += s.timeouts
        counts["skipped"] += s.skipped
    return counts


def _classes(scored: Sequence[CaseStats]) -> dict[str, int]:
    """Cases by stability class, every class named (0 when none): ``summary.classes`` (SPEC 20)."""
    counts = dict.fromkeys((c.value for c in StabilityClass), 0)
    for s in scored:
        counts[StabilityClass(s.stability_class).value] += 1
    return counts


def summarize(stats: Sequence[CaseStats], *, duration_ms: float, runs_per_case: int) -> SweepSummary:
    """Sweep figures; stable/unstable and passed/failed count only cases that were not skipped."""
    by_status = _by_status(stats)
    scored = [s for s in stats if s.label != "skipped"]
    scored_runs = sum(s.runs - s.skipped for s in stats)
    labels = [s.label for s in stats]
    costs = CostTotals()
    served = ServedCounts()
    for case in stats:
        costs.add_case(case)
        served.merge(case.served)
    return SweepSummary(
        total_cases=len(stats),
        total_runs=scored_runs,  # a skipped case's placeholder result is not a run (SPEC 7)
        runs_per_case=runs_per_case,
        overall_pass_rate=percent(by_status["passed"], scored_runs),
        stable_cases=sum(1 for s in scored if s.stable),
        unstable_cases=sum(1 for s in scored if not s.stable),  # Yao's meaning: not stable (flaky or broken)
        classes=_classes(scored),
        passed_cases=sum(1 for s in scored if s.case_passed),
        failed_cases=sum(1 for s in scored if not s.case_passed),
        skipped_cases=labels.count("skipped"),
        flaky_cases=labels.count("flaky"),
        broken_cases=labels.count("broken"),
        duration_ms=round(duration_ms, 1),
        by_status=by_status,
        failure_classes=merge_failure_classes(s.failure_classes for s in stats),
        skipped_ids=[s.id for s in stats if s.label == "skipped"],
        runs_saved=sum(s.runs_saved for s in stats), **costs.figures(by_status["passed"]),
        runs_not_run=sum(s.runs_not_run for s in stats), queued_ms=round(sum(s.queued_ms for s in stats), 3),
        semantic=sweep_semantic_status([s.semantic_status for s in scored]),
        served=served.sorted() if served else None,
    )


def build_report(stats: Sequence[CaseStats], *, duration_ms: float, runs_per_case: int,
                 environment: dict[str, Any], metadata: dict[str, Any] | None = None,
                 envelope: SweepEnvelope | None = None, outcome: SweepOutcome | None = None) -> SweepReport:
    """The whole report of a sweep, in the order the cases were given.

    Skipped cases count in the summary (``skipped_cases``, ``skipped_ids``) but get no result
    row: a row would carry a pass rate of 0 and a stability class for a case that never ran,
    and ``jq '.results | all(.pass_rate >= 80)'`` would no longer mean what it says.

    ``metadata``: written-out keys (the envelope's and outcome's are typed); ``envelope`` wins.
    """
    user, keyed = SweepEnvelope.split(metadata or {})
    envelope = SweepEnvelope.model_validate({**keyed, **(envelope.model_dump() if envelope else {})})
    mark_quarantined(stats, envelope.quarantine)
    flag_retry_bias(stats)
    if (bias := retry_bias_summary(stats)) is not None:
        envelope = envelope.updated(retry_bias=bias)
    load = flag_load_bias(stats)  # SPEC 25: each case's load_bias split at the sweep's median in_flight
    typed: dict[str, Any] = {} if outcome is None else {"outcome": outcome}  # else metadata's outcome keys are read
    summary = summarize(stats, duration_ms=duration_ms, runs_per_case=runs_per_case)
    summary.load_bias = load
    return SweepReport(
        summary=summary,
        environment=dict(environment),
        results=[s for s in stats if s.label != "skipped"],
        metadata=user, envelope=envelope, **typed,
    )


_STOPPED_CODES = {"interrupted": ExitCode.INTERRUPTED, "cancelled": ExitCode.RUNTIME_ERROR,
                  "quota": ExitCode.QUOTA, "budget": ExitCode.BUDGET}
"""Stop reasons that decide the exit code whatever the cases say (fail-fast does not: its failed case does)."""


def exit_code_for(report: SweepReport) -> ExitCode:
    """SPEC 10's table, first match wins: an unfinished sweep (failed, abandoned, or a snapshot
    of one still running) is 3; a sweep stopped by Ctrl-C, ``farm cancel``, a quota or a budget
    has its own code (a cancelled sweep is 3: it did not finish, so it must not read as green);
    else 3 when no run reached the agent (``unreachable``), 1 when a case failed or the
    run-weighted ``--min-overall-pass-rate`` was missed, 0 otherwise.
    SIGTERM's 143 is the CLI's to choose: the report only says ``interrupted``.
    """
    if is_partial(report):
        return ExitCode.RUNTIME_ERROR
    code = _STOPPED_CODES.get(str(report.outcome.stopped))
    if code is not None:
        return code
    if unreachable(report):
        return ExitCode.RUNTIME_ERROR
    failed = any(case_verdict(s) == "failed" and not is_quarantined(s) for s in report.results)
    return ExitCode.CASES_FAILED if failed or below_overall_gate(report) or matrix_failed(report) else ExitCode.OK


def matrix_failed(report: SweepReport) -> bool:
    """A matrix sweep (SPEC 22) with an arm ``worse`` than the baseline arm on some case, or an arm
    whose runs miss ``--min-overall-pass-rate`` (each arm is gated on its own runs)."""
    if report.matrix is None:
        return False
    return any(report.matrix.worse.values()) or bool(arms_below_overall_gate(report))


def arms_below_overall_gate(report: SweepReport) -> list[str]:
    """The arms of a matrix whose own runs miss ``--min-overall-pass-rate`` (as ``below_overall_gate``
    reads the whole sweep's: exactly, quarantined cases left out)."""
    gate = report.envelope.min_overall_pass_rate
    if gate is None:
        return []
    below = []
    for arm in report.arms or ():
        counted = [c for c in report.results if c.arm == arm.name and not is_quarantined(c)]
        scored = sum(c.runs - c.skipped for c in counted)
        if scored > 0 and Fraction(sum(c.passed for c in counted), scored) < Fraction(str(gate)):
            below.append(arm.name)
    return below


def is_partial(report: SweepReport) -> bool:
    """The report is of an unfinished sweep (a partial journal's, a snapshot of one in flight)."""
    return report.outcome.partial


def unreachable(report: SweepReport) -> bool:
    """Every run of the sweep failed to reach the agent (``infra:connect``, an authentication 4xx):
    exit 3, "the agent could not be reached", not a broken suite's 1 (SPEC 20)."""
    ran = sum(s.runs - s.skipped for s in report.results)
    return ran > 0 and sum(s.unreached for s in report.results) == ran


def below_overall_gate(report: SweepReport) -> bool:
    """``--min-overall-pass-rate`` (``metadata.min_overall_pass_rate``, 0–1) not met: passed runs
    over scored runs (run-weighted), compared exactly, not through the rounded percentage."""
    gate = report.envelope.min_overall_pass_rate
    if gate is None:
        return False
    by_status = report.summary.by_status
    held = [c for c in report.results if is_quarantined(c)]  # a quarantined case gates nothing, this included
    scored = sum(n for status, n in by_status.items() if status != "skipped") - sum(c.runs - c.skipped for c in held)
    passed = by_status.get("passed", 0) - sum(c.passed for c in held)
    return scored > 0 and Fraction(passed, scored) < Fraction(str(gate))
