"""How every report shows fleet control (SPEC 13): costs, tokens, adaptive runs, the budget.

One wording for the terminal, Markdown, HTML and JUnit: a cost is ``$0.0123`` or ``unknown``
(never $0 for an unknown price); tokens are ``1,234 in / 56 out (7 cached, 8 reasoning)``; a case
stopped by an adaptive rule says so, since its pass rate is biased by stopping. Pure.
"""

from __future__ import annotations

import math

from farm.models import BudgetFigures, CaseStats, SweepEnvelope, SweepReport, SweepSummary

UNKNOWN = "unknown"
BIASED = "biased: adaptive"
"""Beside the pass rate of a case an adaptive rule stopped early."""
BIASED_NOTE = "adaptive: runs stopped once the verdict was settled, so pass rates are biased by stopping"


def cost_text(usd: float | None) -> str:
    """``$12.35``, ``$0.0123``, ``$0.00000645`` (three significant digits below a dollar), ``$0``,
    or ``unknown``."""
    if usd is None:
        return UNKNOWN
    if usd <= 0:
        return "$0"
    if usd >= 1:
        return f"${usd:,.2f}"
    return f"${usd:.{min(12, 2 - math.floor(math.log10(usd)))}f}"


def tokens_text(usage: dict[str, int] | None) -> str:
    """``1,234 in / 56 out (7 cached, 8 reasoning)``; ``unknown`` when nothing was reported."""
    if not usage:
        return UNKNOWN
    parts = [f"{usage[key]:,} {word}" for key, word in (("input_tokens", "in"), ("output_tokens", "out"))
             if key in usage]
    extra = [f"{usage[key]:,} {word}" for key, word in (("cached_tokens", "cached"), ("reasoning_tokens", "reasoning"))
             if key in usage]
    return " / ".join(parts) + (f" ({', '.join(extra)})" if extra else "")


def stopped_early(stats: CaseStats) -> bool:
    """An adaptive rule stopped the case before its planned runs: only then is its pass rate
    biased by stopping (an adaptive case that ran every planned run is not)."""
    return stats.adaptive and stats.runs_saved > 0


def adaptive_text(stats: CaseStats) -> str | None:
    """``decided fail after 10 runs, 7 saved`` for a case an adaptive rule stopped; else None."""
    if not stats.adaptive:
        return None
    if stats.adaptive_verdict is None:
        return "adaptive, undecided"
    return f"decided {stats.adaptive_verdict} after {stats.decided_after} runs, {stats.runs_saved} saved"


def cost_rows(figures: CaseStats | SweepSummary) -> list[tuple[str, str]]:
    """(label, value) rows of a case's or the sweep's usage and cost (judges only when called)."""
    rows = [("Cost", cost_text(figures.cost_usd)), ("Tokens", tokens_text(figures.usage))]
    if figures.judge_usage is not None:
        rows += [("Judge cost", cost_text(figures.judge_cost_usd)), ("Judge tokens", tokens_text(figures.judge_usage))]
    return [*rows, ("Cost per passing run", cost_text(figures.cost_per_passing_run))]


def sweep_rows(summary: SweepSummary, envelope: SweepEnvelope, budget: BudgetFigures | None) -> list[tuple[str, str]]:
    """The summary rows of fleet control: costs, runs saved by adaptive runs, the budget."""
    rows = cost_rows(summary)
    if envelope.adaptive:
        rows.append(("Runs saved (adaptive)", f"{summary.runs_saved:,}"))
    if budget is not None:
        rows.append(("Budget", budget_text(budget)))
    return rows


def budget_text(budget: BudgetFigures) -> str:
    """``$0.0123 of $0.05 spent; 1,234 of 5,000 tokens``."""
    parts = []
    if budget.max_usd is not None:
        parts.append(f"{cost_text(budget.spent_usd)} of {cost_text(budget.max_usd)} spent")
    if budget.max_tokens is not None:
        parts.append(f"{budget.spent_tokens:,} of {budget.max_tokens:,} tokens")
    return "; ".join(parts)


def total_cost(summary: SweepSummary) -> float | None:
    """The agent's and the judges' cost together (unknown when either is)."""
    total = summary.cost_usd
    if total is not None and summary.judge_usage is not None:
        total = None if summary.judge_cost_usd is None else total + summary.judge_cost_usd
    return total


def summary_cost(summary: SweepSummary) -> str:
    """The terminal summary's cost clause: ``cost $0.12 ($0.004 per passing run)``."""
    text = f"cost {cost_text(total_cost(summary))}"
    if summary.cost_per_passing_run is not None:
        text += f" ({cost_text(summary.cost_per_passing_run)} per passing run)"
    return text


def fleet_line(report: SweepReport, *, always: bool) -> str | None:
    """``cost $0.12 ($0.004 per passing run); tokens 1,234 in / 56 out; 240 runs saved by --adaptive;
    budget $0.12 of $0.50 spent``. The cost clause ``always``, else only when the sweep reported usage
    or a cost; the others when the sweep was adaptive or ran under a budget."""
    s = report.summary
    parts = []
    if always or s.usage or s.judge_usage is not None or s.cost_usd is not None:
        parts.append(summary_cost(s))
        if s.usage:
            parts.append(f"tokens {tokens_text(s.usage)}")
    if report.envelope.adaptive:
        parts.append(f"{s.runs_saved:,} runs saved by --adaptive")
    if report.outcome.budget is not None:
        parts.append(f"budget {budget_text(report.outcome.budget)}")
    return "; ".join(parts) or None


__all__ = ["BIASED", "BIASED_NOTE", "UNKNOWN", "adaptive_text", "budget_text", "cost_rows", "cost_text",
           "fleet_line", "stopped_early", "summary_cost", "sweep_rows", "tokens_text", "total_cost"]
