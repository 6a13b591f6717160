"""A finished matrix sweep's report (SPEC 22): its ``arms`` and its ``matrix`` of verdicts.

The one finisher (``farm.sweep.lifecycle.finish_sweep``) adds them, so an in-process sweep, a
distributed one (its worker's ``farm.report``, ``farm results``) and a journal's rebuilt report
read alike. Each arm's cases are compared with the baseline arm's exactly as ``farm compare``
compares two sweeps (``farm.stats.compare.compare``: one-sided Boschloo tests, BH q-values over
the arm's cases, the Newcombe interval for ``unchanged``), its verdicts renamed: ``regressed``
is ``worse``, ``improved`` is ``better``. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from farm.models import (
    ArmReport,
    ArmSummary,
    CaseStats,
    MatrixCell,
    MatrixPlan,
    MatrixSection,
    MatrixVerdict,
    SweepReport,
)
from farm.stats.compare import CaseComparison, compare, snapshot_of
from farm.stats.latency import merged, quantile
from farm.stats.measures import percent, wilson_percent

RENAMED: dict[str, MatrixVerdict] = {"regressed": "worse", "improved": "better", "unchanged": "unchanged",
                                     "inconclusive": "inconclusive"}


def with_matrix(report: SweepReport, matrix: MatrixPlan) -> SweepReport:
    """``report`` with its ``arms`` and ``matrix`` sections (at the matrix's ``alpha`` and ``min_drop``)."""
    alpha, min_drop = matrix.alpha, matrix.min_drop
    by_arm = {arm.name: [s for s in report.results if s.arm == arm.name] for arm in matrix.arms}
    arms = [ArmReport(name=arm.name, agent=arm.agent, connector=arm.connector, options=dict(arm.options),
                      summary=arm_summary(by_arm[arm.name])) for arm in matrix.arms]
    base = snapshot_of(report.model_copy(update={"results": by_arm[matrix.baseline]}))
    rows: dict[tuple[str, str], CaseComparison] = {}
    worse = dict.fromkeys(matrix.names, 0)
    for arm in matrix.arms:
        if arm.name == matrix.baseline:
            continue
        head = snapshot_of(report.model_copy(update={"results": by_arm[arm.name]}))
        for row in compare(base, head, alpha=alpha, min_drop=min_drop).cases:
            rows[(row.id, arm.name)] = row
            worse[arm.name] += row.verdict == "regressed"
    section = MatrixSection(
        baseline=matrix.baseline, seed=matrix.seed, alpha=alpha, min_drop=min_drop,
        cells=_cells(report.results, matrix, rows), worse=worse,
        pareto_cost=pareto(arms, lambda a: a.summary.cost_usd),
        pareto_latency=pareto(arms, lambda a: a.summary.p95_latency_ms),
    )
    return report.model_copy(update={"arms": arms, "matrix": section})


def _cells(results: Sequence[CaseStats], matrix: MatrixPlan,
           rows: dict[tuple[str, str], CaseComparison]) -> list[MatrixCell]:
    ran = {(s.id, s.arm): s for s in results}
    cells = []
    for case_id in dict.fromkeys(s.id for s in results):
        for arm in matrix.names:
            stats, row = ran.get((case_id, arm)), rows.get((case_id, arm))
            runs, passed = (stats.runs - stats.skipped, stats.passed) if stats is not None else (0, 0)
            if arm == matrix.baseline:
                verdict: MatrixVerdict = "baseline" if stats is not None else "missing"
                cells.append(MatrixCell(case=case_id, arm=arm, verdict=verdict, runs=runs, passed=passed))
            elif row is None or row.verdict not in RENAMED:
                cells.append(MatrixCell(case=case_id, arm=arm, verdict="missing", runs=runs, passed=passed))
            else:
                cells.append(MatrixCell(case=case_id, arm=arm, verdict=RENAMED[row.verdict], runs=runs, passed=passed,
                                        delta=row.delta, p_value=row.p_value, q_value=row.q_value))
    return cells


def arm_summary(results: Sequence[CaseStats]) -> ArmSummary:
    """One arm's figures over its cases (skipped ones have no result row)."""
    runs = sum(s.runs - s.skipped for s in results)
    passed = sum(s.passed for s in results)
    costs = [s.cost_usd for s in results]
    usages = [s.usage for s in results if s.usage]
    durations = merged(s.duration_histogram for s in results)
    return ArmSummary(
        cases=len(results), runs=runs, passed=passed, pass_rate=percent(passed, runs),
        pass_rate_ci=wilson_percent(passed, runs),
        passed_cases=sum(s.case_passed for s in results), failed_cases=sum(not s.case_passed for s in results),
        cost_usd=None if not results or any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 10),
        tokens=sum(u.get("input_tokens", 0) + u.get("output_tokens", 0) for u in usages) if usages else None,
        p50_latency_ms=quantile(durations, 0.5), p95_latency_ms=quantile(durations, 0.95),
    )


def pareto(arms: Sequence[ArmReport], cost: Callable[[ArmReport], float | None]) -> list[str]:
    """The arms no other arm beats: at least as high a pass rate and as low a ``cost``, better in
    one. Empty when some arm's ``cost`` is unknown (a front over part of the arms would mislead)."""
    known = [(arm, cost(arm)) for arm in arms]
    if any(value is None for _, value in known):
        return []
    front = []
    for arm, value in known:
        assert value is not None
        rate = arm.summary.pass_rate
        if not any((o.summary.pass_rate >= rate and (v or 0.0) <= value)
                   and (o.summary.pass_rate > rate or (v or 0.0) < value) for o, v in known if o is not arm):
            front.append(arm.name)
    return front


__all__ = ["arm_summary", "pareto", "with_matrix"]
