"""Usage and cost totals of cases and sweeps (SPEC 13): the agent's and the judges' apart.

One ``CostTotals`` adds runs (a case, in ``CaseAccumulator``) or cases (a sweep, in
``summarize``); ``figures`` gives the fields ``CaseStats`` and ``SweepSummary`` share. A cost
is unknown (None) as soon as one part's is: a partial sum would read as the whole, and a
report must say "unknown", never $0. A part with no judge call adds nothing to the judges'.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from farm.models import CaseStats, RunResult, RunStatus, run_status
from farm.models.usage import Usage, UsageTotals
from farm.stats.prices import cost_per_passing_run


def _usage(counts: dict[str, int] | None) -> Usage | None:
    return Usage(**counts) if counts else None


class CostTotals:
    """The agent's and the judges' usage and cost, summed over runs or cases."""

    __slots__ = ("agent", "judges")

    def __init__(self) -> None:
        self.agent = UsageTotals()
        self.judges = UsageTotals()

    def _add(self, usage: dict[str, int] | None, cost: float | None, judge_usage: dict[str, int] | None,
             judge_cost: float | None) -> None:
        self.agent.add(_usage(usage), cost)
        if judge_usage is not None:  # judges were called: their cost counts, known or not
            self.judges.add(_usage(judge_usage), judge_cost)

    def add_run(self, result: RunResult) -> None:
        """A counted run (skipped runs made no call and add nothing)."""
        if run_status(result.status) is not RunStatus.SKIPPED:
            self._add(result.usage, result.cost_usd, result.judge_usage, result.judge_cost_usd)

    def add_case(self, stats: CaseStats) -> None:
        """A case's totals (a case with no scored run adds nothing)."""
        if stats.runs > stats.skipped:
            self._add(stats.usage, stats.cost_usd, stats.judge_usage, stats.judge_cost_usd)

    def figures(self, passed_runs: int) -> dict[str, Any]:
        """``usage``, ``cost_usd``, ``judge_usage``, ``judge_cost_usd``, ``cost_per_passing_run``."""
        agent, judges = self.agent.to_dict(), self.judges.to_dict()
        total = agent["cost_usd"]
        if total is not None and self.judges.parts:
            total = None if judges["cost_usd"] is None else total + judges["cost_usd"]
        return {
            "usage": agent["usage"] or None,
            "cost_usd": agent["cost_usd"],
            "judge_usage": judges["usage"] if self.judges.parts else None,
            "judge_cost_usd": judges["cost_usd"],
            "cost_per_passing_run": cost_per_passing_run(total, passed_runs),
        }


__all__ = ["CostTotals"]
