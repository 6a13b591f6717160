"""``farm.aggregate`` and ``farm.report``: a case's statistics, then the sweep's report, each once.

The work is ``farm.distributed.delivery.close``, which the reconciler and ``farm results`` use too; the
report is built by ``farm.sweep.lifecycle.finish_sweep``, the same finish the in-process executor uses,
with the same inputs (plan, each aggregated case's statistics, the plan's case order, the stop
reason), so a stopped sweep reports its stop reason, the cases not run and its totals the same way.
"""

from __future__ import annotations

from farm.distributed.delivery.close import Aggregated, aggregate, report
from farm.distributed.store.memory import until_writable
from farm.distributed.store.sweep_store import SweepStore
from workers.context import CACHE


def aggregate_case(store: SweepStore, sweep_id: str, case_id: str, *, final: bool = False) -> Aggregated | None:
    """``_aggregate_case``, waiting while Redis refuses writes for memory (``farm.distributed.store.memory``)."""
    return until_writable(lambda: _aggregate_case(store, sweep_id, case_id, final=final),
                          f"the statistics of case {case_id} of sweep {sweep_id}")


def _aggregate_case(store: SweepStore, sweep_id: str, case_id: str, *, final: bool = False) -> Aggregated | None:
    """``farm.aggregate``: the case's statistics from its stored runs, stored once (see
    ``farm.distributed.delivery.close.aggregate``). None when the sweep is gone."""
    sweep = CACHE.sweep(store, sweep_id)
    planned = CACHE.case(store, sweep_id, case_id) if sweep is not None else None
    if sweep is None or planned is None:
        return None
    return aggregate(store, sweep, planned, final=final)


def report_sweep(store: SweepStore, sweep_id: str) -> bool:
    """``farm.report``: build, render and store the sweep's report once; False if already done."""
    return until_writable(lambda: _report_sweep(store, sweep_id), f"the report of sweep {sweep_id}")


def _report_sweep(store: SweepStore, sweep_id: str) -> bool:
    sweep = CACHE.sweep(store, sweep_id)
    return sweep is not None and report(store, sweep)


__all__ = ["Aggregated", "aggregate_case", "report_sweep"]
