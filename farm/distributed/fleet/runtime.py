"""Fleet control of a distributed sweep: what workers share through the farm's Redis store.

- ``redis_runtime``: the sweep's ``FleetRuntime`` over Redis backends, one set per store URL
  and process (rate limits of every key shared by every worker and sweep on the store, the
  sweep's budget, the judge-verdict cache), built from the stored plan's fleet settings.
- Adaptive runs: a worker that stores the run deciding its case marks the case decided
  (``mark_decided``); queued runs of a decided case are dropped as those of a stopped sweep are
  (``is_decided``: one round trip, asked only for cases planned with an adaptive rule).
- ``budget_figures``: the budget and what was spent, for the report ``farm.report`` builds.
"""

from __future__ import annotations

import threading

from farm.distributed.fleet.budget import RedisBudgetBackend, paid_usd
from farm.distributed.fleet.client import LoopClients
from farm.distributed.fleet.judge_cache import RedisVerdictCache
from farm.distributed.fleet.rates import RedisRateBackend
from farm.distributed.store import keys
from farm.distributed.store.sweep_store import SweepStore
from farm.fleet.runtime import FleetRuntime, budget_report
from farm.models import BudgetFigures
from farm.plan.sweep_plan import SweepPlan

_lock = threading.Lock()
_backends: dict[str, tuple[RedisRateBackend, RedisBudgetBackend, RedisVerdictCache]] = {}


def _shared(url: str, ttl_s: int) -> tuple[RedisRateBackend, RedisBudgetBackend, RedisVerdictCache]:
    """This process's backends for a store: one set of per-loop clients serves all three."""
    with _lock:
        found = _backends.get(url)
        if found is None:
            clients = LoopClients(url)
            found = _backends[url] = (RedisRateBackend(url, clients=clients),
                                      RedisBudgetBackend(url, clients=clients, ttl_s=ttl_s),
                                      RedisVerdictCache(url, clients=clients, ttl_s=ttl_s))
        return found


def redis_runtime(sweep: SweepPlan, url: str, ttl_s: int) -> FleetRuntime:
    """The fleet control of ``sweep`` on this worker (thread-safe: every pool thread uses it)."""
    rates, budgets, verdicts = _shared(url, ttl_s)
    return FleetRuntime(sweep, rates=rates, budgets=budgets, verdicts=verdicts)


def mark_decided(store: SweepStore, sweep_id: str, case_id: str) -> None:
    """The case's adaptive rule has decided: its runs not started yet are dropped."""
    pipe = store.client.pipeline(transaction=False)
    pipe.sadd(keys.decided_key(sweep_id), case_id)
    pipe.expire(keys.decided_key(sweep_id), store.ttl)
    pipe.execute()


def is_decided(store: SweepStore, sweep_id: str, case_id: str) -> bool:
    return bool(store.client.sismember(keys.decided_key(sweep_id), case_id))


def budget_figures(store: SweepStore, sweep: SweepPlan) -> BudgetFigures | None:
    """The limits and what a budgeted sweep spent, for its report (None: the sweep has no budget).

    What was spent is every call the budget saw paid: those settled and those still reserved. A
    call whose answer died with its worker (SIGKILL, OOM) reserved its most and never settled; a
    report is built once no run is in flight (or when a stopped sweep is closed: then a call still
    out counts too), so what is still reserved then was spent, at its reservation's price (SPEC 26:
    reported spend counts every paid call, a killed worker's too); a probe not settled counts at
    its key's dearest call (``paid_usd``)."""
    limit = sweep.fleet.budget
    if limit is None:
        return None
    return budget_report(limit, *paid_usd(store.client.hgetall(keys.budget_key(sweep.sweep_id))))


__all__ = ["budget_figures", "is_decided", "mark_decided", "redis_runtime"]
