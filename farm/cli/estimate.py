"""``farm test --estimate``: print what the prepared sweep will cost, run nothing else, write no report.

Exit 0, or 4 (``ExitCode.BUDGET``) when ``--budget`` / ``--max-tokens`` is given and the estimate
is over it, so CI can run ``farm test --estimate --budget 5 && farm test --budget 5``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from farm.cli.estimate_power import power_lines
from farm.cli.run import warn
from farm.defaults import DEFAULT_ALPHA, DEFAULT_MIN_DROP
from farm.durations import format_ms
from farm.errors import ExitCode
from farm.estimate.forecast import Forecast, forecast, plan_calls
from farm.history.estimate_basis import Basis, Recorded, by_probes, from_history, recorded_counts
from farm.plan.fleet import agent_ref_key
from farm.reports.fleet import cost_text

if TYPE_CHECKING:
    from farm.api import PreparedSweep
    from farm.history.session import HistoryOptions
    from farm.plan.fleet import BudgetLimit
    from farm.plan.rate_specs import RateLimit
    from farm.plan.sweep_plan import PlannedCase, SweepPlan


def _from_history(prepared: PreparedSweep, history: HistoryOptions | None) -> tuple[Basis | None, Recorded | None]:
    """The history's per-run basis and the suite's recorded case counts (None each: no history,
    none of the same suite, or it cannot be read). A read: a SQLite history that does not exist is
    not created (nor its directory)."""
    if history is not None and not history.enabled and history.url is None:
        return None, None
    from farm.errors import FarmError
    from farm.history.engine import missing_sqlite_file
    from farm.history.facts import suite_hashes
    from farm.history.location import history_url
    from farm.history.store import HistoryStore

    url = history_url(history.url if history is not None else None)
    try:
        if missing_sqlite_file(url):
            return None, None
        store = HistoryStore.open(url, tell=warn)
    except FarmError:
        return None, None
    suites, agent = suite_hashes(prepared.loaded.files, prepared.loaded.root), prepared.plan.agent_label
    try:
        return from_history(store, suites, agent), recorded_counts(store, suites, agent)
    finally:
        store.close()


def _run_locally(plan: SweepPlan) -> Any:
    from farm.sweep.local import LocalExecutor
    from farm.sweep.observers import Observers

    return LocalExecutor().run(plan, Observers())


def _limit_key(plan: SweepPlan, planned: PlannedCase) -> str:
    """The rate-limit key of a planned case's agent (its connector's, else the agent's own)."""
    own = agent_ref_key(planned.agent)
    return plan.fleet.agent_keys.get(own, own)


def _limits(plan: SweepPlan) -> list[tuple[str, RateLimit]]:
    table = plan.fleet.limit_table()
    keys = sorted({_limit_key(plan, c) for c in plan.cases})
    return [(key, table.for_key(key)) for key in keys if not table.for_key(key).empty]


def _confirm_calls(result: Forecast) -> str:
    return (f"; {result.confirm_calls:,} of them --confirm-failures repeats, asked only when a first verdict fails"
            if result.confirm_calls else "")


def _confirm_cost(result: Forecast) -> str:
    return (f" (of which at most {cost_text(result.confirm_cost_usd)} for the --confirm-failures repeats)"
            if result.confirm_cost_usd is not None else "")


def lines(result: Forecast, basis: Basis, cases: int) -> list[str]:
    tokens = "unknown" if result.tokens is None else f"{result.tokens:,}"
    limited = f", limited by {result.limited_by}" if result.limited_by else ""
    return [
        f"estimate: {cases} cases, {result.runs:,} runs ({basis.source})",
        f"  calls: {result.agent_calls:,} agent, {result.judge_calls:,} judge (at most: the judge cache"
        f" may answer some{_confirm_calls(result)})",
        f"  tokens: {tokens}",
        f"  cost: {cost_text(result.cost_usd)}{_confirm_cost(result)}",
        f"  wall: {format_ms(result.wall_s * 1000)} with {result.lanes} runs at once{limited}",
    ]


def run_estimate(prepared: PreparedSweep, history: HistoryOptions | None, workers: int, *,
                 detect: float | None = None) -> int:
    """Estimate, print, and say whether it fits the budget (see the module docstring)."""
    plan = prepared.plan
    recorded_basis, recorded = _from_history(prepared, history)
    basis = recorded_basis or by_probes(plan, _run_locally)
    calls = plan_calls(plan.cases, lambda c: _limit_key(plan, c), plan.env.confirm_failures)
    result = forecast(calls, basis.per_run, parallel=plan.parallel, workers=workers, limits=_limits(plan))
    budget = plan.fleet.budget
    if basis.per_run.runs == 0:  # no probe scored: its figures (and a wall of 0ms) would mislead
        return _no_basis(result, basis, plan.total_cases, budget)
    for line in lines(result, basis, plan.total_cases):
        click.echo(line)
    if plan.ramp:  # SPEC 25: the runs above are every level's
        levels = len(plan.ramp)
        click.echo(f"  ramp: {levels} levels ({', '.join(map(str, plan.ramp))} in flight) × "
                   f"{plan.runs_per_case // levels:,} runs of each case = {plan.runs_per_case:,} runs per case "
                   f"(counted above; the wall assumes --parallel {plan.parallel})")
    for line in power_lines(plan, recorded, alpha=history.alpha if history else DEFAULT_ALPHA,
                            min_drop=history.min_drop if history else DEFAULT_MIN_DROP, detect=detect,
                            cost_per_run=basis.per_run.cost_usd):
        click.echo(line)
    if budget is None:
        return int(ExitCode.OK)
    over = _over_budget(result, budget)
    for problem in over:
        click.echo(f"  over budget: {problem}")
    if not over:
        click.echo(f"  within the budget of {budget.describe()}")
    return int(ExitCode.BUDGET if over else ExitCode.OK)


def _no_basis(result: Forecast, basis: Basis, cases: int, budget: BudgetLimit | None) -> int:
    for line in lines(result, basis, cases)[:2]:  # what was planned; no tokens, cost or wall
        click.echo(line)
    if budget is not None and budget.max_usd is not None:
        click.echo(f"  over budget: the probe itself would exceed the budget of ${budget.max_usd:g}: "
                   "no figure to scale (raise --budget, or estimate without it)")
        return int(ExitCode.BUDGET)
    click.echo("  cost, tokens, wall: unknown (no probe run was scored: farm test --runs 1 shows why)")
    return int(ExitCode.BUDGET if budget is not None else ExitCode.OK)


def _over_budget(result: Forecast, budget: BudgetLimit) -> list[str]:
    """What of the estimate is over ``--budget`` / ``--max-tokens`` (an unknown figure cannot fit)."""
    over = []
    if budget.max_usd is not None and (result.cost_usd is None or result.cost_usd > budget.max_usd):
        over.append(f"cost {cost_text(result.cost_usd)} over the budget of ${budget.max_usd:g}"
                    if result.cost_usd is not None else "cost unknown: cannot say it fits the budget")
    if budget.max_tokens is not None and (result.tokens is None or result.tokens > budget.max_tokens):
        over.append(f"tokens {result.tokens} over --max-tokens {budget.max_tokens}")
    return over
