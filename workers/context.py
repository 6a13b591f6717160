"""Process-wide worker state: the store per URL, the sweep/case cache, each pool thread's loop.

A worker runs many runs at once in a ``threads`` pool; each pool thread owns an asyncio loop and
its own agent adapters (an HTTP client is bound to the loop that made it, and several small
connection pools beat one big one: ARCHITECTURE, "Measured"). Sweep and case data are read from
Redis once per process and cached, bounded, least recently used out first; a plan that names a
bundle is read as its copy in the data directory has it (``farm.distributed.bundles.BundleView``).
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from farm.agents.judge import create_judge_resolver
from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.agents.resolve import AgentPool
from farm.checks.base import JudgeResolver
from farm.distributed.bundles import BundleView
from farm.distributed.fleet.runtime import redis_runtime
from farm.distributed.store.sweep_store import SweepStore, connect
from farm.fleet.runtime import FleetRuntime
from farm.plan.sweep_plan import PlannedCase, SweepPlan
from farm.run.simulators import SimulatorPool, create_simulator_pool
from farm.settings import data_dir

STORE_RETRIES = 10
"""Redis command retries (exponential backoff capped at 4 s: about half a minute of outage)."""

_stores: dict[str, SweepStore] = {}
_stores_lock = threading.Lock()

T = TypeVar("T")


def get_store(url: str, ttl: int) -> SweepStore:
    """The process-wide store for ``url`` (redis-py clients are thread-safe)."""
    with _stores_lock:
        store = _stores.get(url)
        if store is None:
            store = _stores[url] = SweepStore(connect(url, retries=STORE_RETRIES), ttl=ttl)
            _store_urls[store] = url
        return store


_store_urls: dict[SweepStore, str] = {}
"""The URL of each store: fleet control opens its own asyncio clients to it."""


def store_url(store: SweepStore) -> str:
    """The URL ``store`` was opened with (an isolated run opens its own)."""
    return _store_urls[store]


class SweepCache:
    """Sweeps and cases read once per process; bounded, least recently used out first."""

    def __init__(self, max_sweeps: int = 64, max_cases: int = 4096) -> None:
        self._lock = threading.Lock()
        self._sweeps: OrderedDict[str, SweepPlan] = OrderedDict()
        self._cases: OrderedDict[tuple[str, str], PlannedCase] = OrderedDict()
        self._fleets: OrderedDict[str, FleetRuntime] = OrderedDict()
        self._limits = (max_sweeps, max_cases)
        self._loading: dict[tuple[int, Any], threading.Lock] = {}
        self._bundles: BundleView | None = None

    def bundles(self) -> BundleView:
        """Where this process unpacks bundles (``FARM_DATA_DIR``), read when first needed."""
        if self._bundles is None:
            self._bundles = BundleView(data_dir())
        return self._bundles

    def _get(self, table: OrderedDict[Any, T], key: Any, limit: int, load: Callable[[], T | None]) -> T | None:
        found = self._cached(table, key)
        if found is not None:
            return found
        # one load per key at a time: a case's runs arrive together, and each pool thread loading
        # it again cost Redis 0.85 reads a run (bench_store.py, 2026-11-25)
        with self._lock:
            loading = self._loading.setdefault((id(table), key), threading.Lock())
        with loading:
            value = self._cached(table, key)
            if value is None:
                value = load()  # outside the cache's lock: other keys load meanwhile
            with self._lock:
                self._loading.pop((id(table), key), None)
                if value is not None:
                    table[key] = value
                    while len(table) > limit:
                        table.popitem(last=False)
        return value

    def _cached(self, table: OrderedDict[Any, T], key: Any) -> T | None:
        with self._lock:
            if key in table:
                table.move_to_end(key)
                return table[key]
        return None

    def sweep(self, store: SweepStore, sweep_id: str) -> SweepPlan | None:
        return self._get(self._sweeps, sweep_id, self._limits[0],
                         lambda: self.bundles().plan(store, store.load_sweep(sweep_id)))

    def case(self, store: SweepStore, sweep_id: str, case_id: str) -> PlannedCase | None:
        return self._get(self._cases, (sweep_id, case_id), self._limits[1],
                         lambda: self.bundles().case(self.sweep(store, sweep_id), store.load_case(sweep_id, case_id)))

    def fleet(self, store: SweepStore, sweep: SweepPlan) -> FleetRuntime:
        """The sweep's fleet control on this worker (``farm.distributed.fleet.runtime``), built once."""
        runtime = self._get(self._fleets, sweep.sweep_id, self._limits[0],
                            lambda: redis_runtime(sweep, _store_urls[store], store.ttl))
        assert runtime is not None
        return runtime


CACHE = SweepCache()


class ThreadState:
    """One pool thread's event loop, agent adapters, judges and simulators."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pools: dict[tuple[AgentOptions, str], AgentPool] = {}
        self.judges: dict[tuple[AgentOptions, str], JudgeResolver | None] = {}
        self.simulators: dict[AgentOptions, SimulatorPool] = {}

    def agent(self, options: AgentOptions, ref: AgentRef, fleet: FleetRuntime) -> Any:
        """The adapter of ``ref``, built with the fleet's hooks (shared by sweeps with equal ones)."""
        pool = self.pools.get((options, fleet.hooks_key))
        if pool is None:
            pool = self.pools[(options, fleet.hooks_key)] = AgentPool(options, fleet.hooks)
        return pool.get(ref)

    def judge(self, options: AgentOptions, fleet: FleetRuntime) -> JudgeResolver | None:
        if (options, fleet.hooks_key) not in self.judges:
            self.judges[(options, fleet.hooks_key)] = create_judge_resolver(options, fleet.hooks)
        return self.judges[(options, fleet.hooks_key)]

    def simulator(self, options: AgentOptions) -> SimulatorPool:
        """The simulated users of dynamic cases (``farm.run.simulators``), one pool per thread."""
        if options not in self.simulators:
            self.simulators[options] = create_simulator_pool(options)
        return self.simulators[options]

    def reset_loop(self) -> None:
        """After an interrupted run the loop may hold half-done work: start a fresh one."""
        self.pools.clear()
        self.judges.clear()
        self.simulators.clear()
        self.loop = asyncio.new_event_loop()


_local = threading.local()


def thread_state() -> ThreadState:
    state = getattr(_local, "state", None)
    if state is None:
        state = _local.state = ThreadState()
    return state


__all__ = ["CACHE", "STORE_RETRIES", "SweepCache", "ThreadState", "get_store", "store_url",
           "thread_state"]
