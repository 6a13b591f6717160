"""``farm.aggregate`` and ``farm.report``: a case's statistics, then the sweep's report, each once.

The report is built by ``farm.lifecycle.finish_sweep``, the same finish the in-process executor
uses, so a stopped sweep reports its stop reason, the cases not run and its totals the same way.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from farm.fleet.redis_runtime import budget_metadata, is_decided
from farm.lifecycle import finish_sweep
from farm.redis_memory import until_writable
from farm.stats import CaseAccumulator, pass_ks
from farm.store import SweepStore
from workers.context import CACHE

log = logging.getLogger("farm.worker")


@dataclass(frozen=True)
class Aggregated:
    """What ``farm.aggregate`` learnt: is the case complete, and is the whole sweep done?"""

    complete: bool
    cases_done: int
    total_cases: int
    queue: str

    @property
    def sweep_done(self) -> bool:
        return self.complete and self.cases_done >= self.total_cases


def aggregate_case(store: SweepStore, sweep_id: str, case_id: str, *, final: bool = False) -> Aggregated | None:
    """``_aggregate_case``, waiting while Redis refuses writes for memory (``farm.redis_memory``)."""
    return until_writable(lambda: _aggregate_case(store, sweep_id, case_id, final=final),
                          f"the statistics of case {case_id} of sweep {sweep_id}")


def _aggregate_case(store: SweepStore, sweep_id: str, case_id: str, *, final: bool = False) -> Aggregated | None:
    """``farm.aggregate``: rebuild the case's statistics from its stored runs and store them once.

    Not ``complete`` when runs are missing and the sweep was not stopped (the caller retries);
    ``final`` stores what is there anyway. None when the sweep is gone.
    """
    sweep = CACHE.sweep(store, sweep_id)
    planned = CACHE.case(store, sweep_id, case_id) if sweep is not None else None
    if sweep is None or planned is None:
        return None
    # full details kept: `farm results -o x.html` may ask for them later
    acc = CaseAccumulator(planned.case, planned.plan, pass_k=pass_ks(sweep.metadata))
    for result in store.case_results(sweep_id, case_id, planned.plan.runs):
        acc.add(result)
    stop = store.stop_reason(sweep_id)
    decided = not acc.done and planned.plan.adaptive is not None and is_decided(store, sweep_id, case_id)
    if not acc.done and stop is None and not decided and not final:  # a decided case's other runs were dropped
        return Aggregated(False, 0, sweep.total_cases, sweep.queue)
    stats = acc.stats() if acc.count else None
    done = store.store_case(sweep_id, case_id, stats)
    return Aggregated(True, done, sweep.total_cases, sweep.queue)


def _render(report: Any, formats: list[str]) -> dict[str, str]:
    from farm.reports import render_report

    rendered = {}
    for fmt in formats:
        try:
            rendered[fmt] = render_report(report, fmt)
        except Exception:  # one bad renderer must not lose the report itself
            log.critical("cannot render the %s report", fmt, exc_info=True)
    return rendered


def report_sweep(store: SweepStore, sweep_id: str) -> bool:
    """``farm.report``: build, render and store the sweep's report once; False if already done."""
    return until_writable(lambda: _report_sweep(store, sweep_id), f"the report of sweep {sweep_id}")


def _report_sweep(store: SweepStore, sweep_id: str) -> bool:
    sweep = CACHE.sweep(store, sweep_id)
    if sweep is None or store.get_report(sweep_id) is not None:
        return False
    report = finish_sweep(
        sweep, store.all_stats(sweep_id), case_ids=store.case_ids(sweep_id), started_at=sweep.started_at,
        duration_ms=max(time.time() - store.submitted_epoch(sweep_id), 0.0) * 1000,
        stopped=store.stop_reason(sweep_id),
    )
    report.metadata.update(budget_metadata(store, sweep))  # what a budgeted sweep spent (SPEC 13)
    return store.store_report(sweep_id, report, _render(report, sweep.formats))


__all__ = ["Aggregated", "aggregate_case", "report_sweep"]
