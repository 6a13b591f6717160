"""Where an estimate's per-run figures come from: the history of the same suite, else probes.

History: the newest recorded sweep of the same suite files (same content, else the same file
names and agent) that recorded what it spent; no call is made. Probes: for each distinct agent,
its first case's first turn run once in this process (its judges too), so a ``py:``/``cmd:``
agent's side effects happen once; the figures scale to the planned calls per run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from farm.estimate.forecast import case_calls
from farm.estimate.spend import PerRun, spend_of
from farm.plan.fleet import agent_ref_key
from farm.plan.sweep_plan import PlannedCases

HISTORY_LOOKBACK = 200
"""Recorded sweeps searched for one of the same suite."""


@dataclass(frozen=True)
class Basis:
    per_run: PerRun
    source: str
    """One line for the user: where the figures come from."""


def _newest_of_the_suite(store: Any, suites: dict[str, str], agent: str | None, *, with_spend: bool) -> Any:
    """The newest recorded sweep of the same suite files (same content, else the same names and agent)."""
    from sqlalchemy import select

    from farm.history.tables import sweeps

    query = select(sweeps.c.id, sweeps.c.sweep_id, sweeps.c.suites, sweeps.c.agent, sweeps.c.spend)
    if with_spend:
        query = query.where(sweeps.c.spend.is_not(None))
    with store.engine.connect() as conn:
        rows = conn.execute(query.order_by(sweeps.c.started_at.desc()).limit(HISTORY_LOOKBACK)).all()
    return next((r for r in rows if r.suites == suites), None) or next(
        (r for r in rows if set(r.suites or {}) == set(suites) and r.agent == agent), None)


@dataclass(frozen=True)
class Recorded:
    """Each case's counts in the newest recorded sweep of the same suite (power: ``farm.stats.power``)."""

    sweep_id: str
    counts: dict[str, tuple[int, int]]
    """Case id → (passed, scored runs)."""


def recorded_counts(store: Any, suites: dict[str, str], agent: str | None) -> Recorded | None:
    """The newest recorded sweep of the same suite's case counts, or None."""
    from sqlalchemy import select

    from farm.history.tables import case_results

    same = _newest_of_the_suite(store, suites, agent, with_spend=False)
    if same is None:
        return None
    query = (select(case_results.c.case_id, case_results.c.passed, case_results.c.runs, case_results.c.skipped)
             .where(case_results.c.sweep == same.id))
    with store.engine.connect() as conn:
        counts = {r.case_id: (r.passed, r.runs - r.skipped) for r in conn.execute(query) if r.runs - r.skipped > 0}
    return Recorded(same.sweep_id, counts)


def from_history(store: Any, suites: dict[str, str], agent: str | None) -> Basis | None:
    """The newest recorded sweep of the same suite with its spend, or None."""
    same = _newest_of_the_suite(store, suites, agent, with_spend=True)
    if same is None or not isinstance(same.spend, dict):
        return None
    per_run = PerRun.from_json(same.spend)
    return Basis(per_run, f"history: sweep {same.sweep_id} of the same suite ({per_run.runs} runs); no call made")


def _probe_case(planned: Any) -> Any:
    from farm.stats import CasePlan

    case = planned.case.model_copy(update={"turns": planned.case.turns[:1]})
    return planned.model_copy(update={"case": case, "plan": CasePlan(1, 0)})


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def _weighted(parts: Sequence[tuple[int, PerRun]]) -> PerRun:
    total = sum(w for w, _ in parts) or 1

    def mean(name: str) -> float | None:
        values: list[tuple[int, float | None]] = [(w, getattr(p, name)) for w, p in parts]
        known = [(w, v) for w, v in values if v is not None]
        if not known or len(known) < len(values):
            return None
        return sum(w * v for w, v in known) / total

    return PerRun(runs=len(parts), tokens=mean("tokens"), cost_usd=mean("cost_usd"),
                  judge_tokens=mean("judge_tokens"), judge_cost_usd=mean("judge_cost_usd"),
                  run_ms=mean("run_ms") or 0.0)


def _probe_figures(plan: Any, planned: Any, run_plan: Any) -> PerRun | None:
    """``planned``'s first turn run once, its figures scaled to one whole run of the case (None: none scored)."""
    probe = _probe_case(planned)
    # the first verdicts only: the forecast adds the --confirm-failures repeats itself
    sub = plan.model_copy(update={"cases": PlannedCases([probe]), "total_cases": 1, "total_runs": 1, "runs_per_case": 1,
                                  "sweep_id": f"{plan.sweep_id}-probe",
                                  "env": dataclasses.replace(plan.env, confirm_failures=1)})
    spent = spend_of(run_plan(sub))
    if spent is None:
        return None
    measured = PerRun.from_json(spent)
    agent_calls, judge_calls = case_calls(planned.case)
    probe_judges = case_calls(probe.case)[1]
    judge_factor = judge_calls / probe_judges if probe_judges else 0.0
    return dataclasses.replace(
        measured, tokens=_scaled(measured.tokens, agent_calls), cost_usd=_scaled(measured.cost_usd, agent_calls),
        judge_tokens=_scaled(measured.judge_tokens, judge_factor),
        judge_cost_usd=_scaled(measured.judge_cost_usd, judge_factor), run_ms=measured.run_ms * agent_calls)


def by_probes(plan: Any, run_plan: Any) -> Basis:
    """Run each distinct agent's first case's first turn once (``run_plan(plan)`` → report)."""
    firsts: dict[str, Any] = {}
    runs: dict[str, int] = {}
    for planned in plan.cases:
        if planned.case.skip:
            continue
        key = agent_ref_key(planned.agent)
        firsts.setdefault(key, planned)
        runs[key] = runs.get(key, 0) + planned.plan.runs
    parts = [(runs[key], figures) for key, planned in firsts.items()
             if (figures := _probe_figures(plan, planned, run_plan)) is not None]
    names = ", ".join(f"{key} (case {firsts[key].id})" for key in firsts)
    return Basis(_weighted(parts), f"probe: one call to each agent and its judges with the first case's first input "
                                   f"({names}); a py:/cmd: agent's side effects happened once")
