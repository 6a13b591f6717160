"""``farm test --estimate``'s power lines (SPEC 25): per case, the smallest drop from its recorded
pass rate that ``farm compare`` detects with power 0.8 at the planned runs, and with ``--detect
PP`` the runs (and their cost) that detect a PP-point drop (``farm.stats.power``)."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from farm.reports.fleet import cost_text
from farm.stats.power import DEFAULT_POWER, MAX_RUNS_SEARCHED, runs_to_detect, smallest_detectable_drop
from farm.wording import plural

if TYPE_CHECKING:
    from farm.history.estimate_basis import Recorded
    from farm.plan.sweep_plan import SweepPlan

__all__ = ["power_lines"]

MAX_CASES_SHOWN = 10


def power_lines(plan: SweepPlan, recorded: Recorded | None, *, alpha: float, min_drop: float,
                detect: float | None, cost_per_run: float | None) -> list[str]:
    """The lines to print (none without a recorded sweep of the suite to measure drops from)."""
    cases = [c for c in plan.cases if not c.case.skip]
    if recorded is None:
        return ["  power: no recorded sweep of this suite to measure a drop from (record one: farm test with "
                "the history on)"] if detect is not None else []
    head = (f"  power (farm compare at alpha {alpha:g}, min drop {min_drop:g} points, power {DEFAULT_POWER:g}; "
            f"from sweep {recorded.sweep_id}; each case's own test: BH across "
            f"{plural(len(cases), 'case')} needs a larger drop):")
    lines, drops, needed = [head], [], []
    for planned in cases:
        counts = recorded.counts.get(planned.id)
        if counts is None:
            lines.append(f"    {planned.id}: not in the recorded sweep")
            continue
        passed, runs = counts
        drop = smallest_detectable_drop(passed, runs, planned.plan.runs, alpha=alpha, min_drop=min_drop)
        drops.append(drop)
        said = (f"a drop of {drop:g} points" if drop is not None else "no drop at all") + \
            f" from {100 * passed / runs:.1f}% ({passed}/{runs} recorded) at {planned.plan.runs} runs"
        if detect is not None:
            n = runs_to_detect(passed, runs, detect, alpha=alpha, min_drop=min_drop)
            needed.append(n)
            said += "; a " + f"{detect:g}-point drop needs " + (
                f"{n} runs" if n is not None else _why_not(detect, min_drop, 100 * passed / runs))
        lines.append(f"    {planned.id}: detects {said}")
    lines = _capped(lines, drops)
    if detect is not None and needed:
        lines.append(_detect_total(detect, needed, cost_per_run))
    return lines


def _why_not(detect: float, min_drop: float, rate: float) -> str:
    if detect <= min_drop:
        return f"a drop above --min-drop {min_drop:g} (at the threshold compare calls at most half)"
    if detect > rate:
        return f"a pass rate above {detect:g}%"
    return f"more than {MAX_RUNS_SEARCHED:,} runs"


def _capped(lines: list[str], drops: list[float | None]) -> list[str]:
    if len(lines) - 1 <= MAX_CASES_SHOWN:
        return lines
    known = [d for d in drops if d is not None]
    median = f" (median detectable drop {statistics.median(known):g} points)" if known else ""
    return [*lines[:MAX_CASES_SHOWN + 1], f"    … {plural(len(lines) - 1 - MAX_CASES_SHOWN, 'more case')}{median}"]


def _detect_total(detect: float, needed: list[int | None], cost_per_run: float | None) -> str:
    if any(n is None for n in needed):
        return f"  to detect a {detect:g}-point drop in every case: not possible for every case (see above)"
    total = sum(n for n in needed if n is not None)
    cost = cost_text(None if cost_per_run is None else cost_per_run * total)
    return f"  to detect a {detect:g}-point drop in every case: {total:,} runs, cost {cost}"
