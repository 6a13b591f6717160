"""A case's statistics and a sweep's report from what the store holds, each stored once.

``farm.aggregate`` and ``farm.report`` on the workers, the reconciler, and ``farm results`` on a
stopped sweep all finish through here (``farm report`` of a sweep still running reads its report so
far: ``report_so_far``), and the report through ``farm.sweep.lifecycle.finish_sweep``,
the in-process executor's finisher: a stopped sweep lists its stop reason, the cases not run
and its totals the same way wherever it ran.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from farm.distributed.fleet.runtime import budget_figures, is_decided
from farm.distributed.store.sweep_store import SweepStore
from farm.errors import InputError
from farm.models import BudgetFigures, SweepReport
from farm.plan.sweep_plan import CaseSlot, PlannedCase, SweepPlan
from farm.stats import CaseAccumulator, pass_ks
from farm.sweep.lifecycle import SweepStatus, finish_sweep
from farm.sweep.replay import case_statistics

log = logging.getLogger("farm.distributed.delivery")


@dataclass(frozen=True)
class Aggregated:
    """What aggregating a case learnt: is the case complete, and is the whole sweep done?"""

    complete: bool
    cases_done: int
    total_cases: int
    queue: str

    @property
    def sweep_done(self) -> bool:
        return self.complete and self.cases_done >= self.total_cases


def aggregate(store: SweepStore, sweep: SweepPlan, planned: PlannedCase, *, final: bool = False) -> Aggregated:
    """Rebuild the case's statistics from its stored runs and store them once.

    Not ``complete`` when runs are missing and the sweep was not stopped (the caller retries);
    ``final`` stores what is there anyway.
    """
    sid, cid = sweep.sweep_id, planned.id
    # full details kept: `farm results -o x.html` may ask for them later
    acc = CaseAccumulator(planned.case, planned.plan, pass_k=pass_ks(sweep.envelope),
                          semantic=sweep.semantic)
    for result in store.case_results(sid, cid, planned.plan.runs):
        acc.add(result)
    if not acc.done and not final:  # the stop key is read only when runs are missing
        decided = planned.plan.adaptive is not None and is_decided(store, sid, cid)
        if store.stop_reason(sid) is None and not decided:  # a decided case's other runs were dropped
            return Aggregated(False, 0, sweep.total_cases, sweep.queue)
    done = store.store_case(sid, cid, acc.stats() if acc.count else None)
    return Aggregated(True, done, sweep.total_cases, sweep.queue)


def report(store: SweepStore, sweep: SweepPlan, *, status: SweepStatus | None = None,
           reason: str | None = None) -> bool:
    """Build and store the sweep's report once; False if it was stored already. Reports are
    rendered where they are asked for (``farm results -o``), from the stored report."""
    sid = sweep.sweep_id
    if store.has_report(sid):
        return False
    budget = budget_figures(store, sweep)  # what a budgeted sweep spent (SPEC 13)
    built = finish_sweep(
        sweep, store.all_stats(sid), case_ids=store.case_ids(sid), started_at=sweep.started_at,
        duration_ms=max(time.time() - store.submitted_epoch(sid), 0.0) * 1000,
        stopped=store.stop_reason(sid), status=status, reason=reason, budget=budget,
    )
    unkept_usd = unkept(budget, built.summary.cost_usd)
    if unkept_usd > 0 and built.summary.cost_usd is not None:  # paid calls no stored run kept (SPEC 26)
        built.summary.cost_usd = _usd(built.summary.cost_usd + unkept_usd)
    # stored without run details (all_stats leaves them out); rendering reads them case by case
    stored = store.store_report(sid, built)
    if stored:
        _export(built)
    return stored


def unkept(budget: BudgetFigures | None, kept_usd: float | None) -> float:
    """What the budget saw paid beyond what the stored runs kept: calls no run kept. A call settles
    in the budget when its answer comes, its run is stored later (after its other turns and its
    checks), so a worker killed in between leaves a call settled that no run kept and no
    reservation holds, besides the calls still reserved (their answers died with it). The report
    counted only the reservations, and was once a call short under load."""
    if budget is None or kept_usd is None:
        return 0.0
    return max(0.0, _usd(budget.spent_usd - kept_usd))


def _usd(amount: float) -> float:
    """A sum of float costs without its binary noise (0.42 + 0.08, not 0.5000000000000001)."""
    return round(amount, 10)


def _export(built: SweepReport) -> None:
    """The worker that closes a sweep exports it to OpenTelemetry (SPEC 19), once: when this
    worker's OTLP endpoint variable is set, or the submitter gave ``--otel``."""
    from farm.reports.otel import export_report, requested

    if requested(bool(built.envelope.otel)) and (problem := export_report(built)) is not None:
        log.warning("sweep %s: %s", built.envelope.sweep_id, problem)


def close(store: SweepStore, sweep: SweepPlan, cases: Sequence[CaseSlot], *,
          status: SweepStatus | None = None, reason: str | None = None) -> bool:
    """Finish the sweep now with what ran: every case not aggregated yet gets its statistics from
    its stored runs (none: a case not run), then the report. Idempotent."""
    done = store.cases_done(sweep.sweep_id)
    for planned in store.load_cases(sweep.sweep_id, [c.id for c in cases if c.id not in done]):
        aggregate(store, sweep, planned, final=True)
    return report(store, sweep, status=status, reason=reason)


def drop_unpublished(store: SweepStore, sweep: SweepPlan, cases: Sequence[CaseSlot],
                     unpublished: Sequence[tuple[CaseSlot, int]]) -> None:
    """A stopped sweep's runs never published are settled as dropped; a case they complete is
    aggregated here (no run of it will arrive to fire its barrier), and the report follows when
    that was the last case."""
    if not unpublished:
        return
    sid = sweep.sweep_id
    store.settle_many(sid, [(slot.id, n) for slot, n in unpublished])
    touched = {slot.id for slot, _ in unpublished}
    wanted = [c for c in cases if c.id in touched]
    done = store.cases_done(sid)
    complete = [slot.id for slot, count in zip(wanted, store.settled_counts(sid, [c.id for c in wanted]), strict=True)
                if count >= slot.runs and slot.id not in done]
    for planned in store.load_cases(sid, complete):
        if aggregate(store, sweep, planned).sweep_done:
            report(store, sweep)


def report_so_far(store: SweepStore, sweep_id: str) -> SweepReport:
    """A distributed sweep's report: the stored one when it finished, else one built from the runs
    stored so far (``running``, or ``stopped`` when it was stopped and is draining)."""
    stored = store.get_report(sweep_id)
    if stored is not None:
        return stored
    plan = store.load_sweep(sweep_id)
    if plan is None:
        raise InputError(f"no sweep {sweep_id!r} (finished sweeps are kept for FARM_RESULT_TTL, default 7 days)")
    case_ids = store.case_ids(sweep_id)
    stats = store.all_stats(sweep_id)
    for case_id in [cid for cid in case_ids if cid not in stats]:
        planned = store.load_case(sweep_id, case_id)
        if planned is not None:
            stats |= case_statistics([planned], store.case_results(sweep_id, case_id, planned.plan.runs),
                                     semantic=plan.semantic)
    return store.with_run_details(finish_sweep(
        plan, stats, case_ids=case_ids, started_at=plan.started_at,
        duration_ms=max(time.time() - store.submitted_epoch(sweep_id), 0.0) * 1000,
        stopped=store.stop_reason(sweep_id), status=SweepStatus.RUNNING))


__all__ = ["Aggregated", "aggregate", "close", "drop_unpublished", "report", "report_so_far"]
