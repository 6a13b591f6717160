"""The Redis store of distributed sweeps: the plan, run results, case statistics, events, report.

The submitter, the worker tasks and ``farm results/cancel/status`` all go through ``SweepStore``.
Every write that must happen once is a Lua script (``farm.distributed.store.lua``), atomic on the server: a
run result is stored set-if-absent *and* appended to the sweep's event stream in one step, so a
run delivered twice (its worker died after starting it) is counted and streamed exactly once.
Keys and TTLs come from ``farm.distributed.store.keys``. The same step sets the run's bit in its case's
``settled`` bitfield (a dropped run, of a stopped sweep, sets it too): that bitfield is the farm's
per-case barrier, which fires ``farm.aggregate`` (see ``workers.tasks``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.retry import Retry

from farm.distributed.store import keys
from farm.distributed.store.answers import Event as Event
from farm.distributed.store.answers import RunStart as RunStart
from farm.distributed.store.answers import Settled as Settled
from farm.distributed.store.answers import SweepProgress as SweepProgress
from farm.distributed.store.answers import Tally as Tally
from farm.distributed.store.deliveries import DeliveryStore
from farm.distributed.store.lifetimes import LifetimeStore
from farm.distributed.store.lua import (
    BEGIN_RUN_LUA,
    CURSOR_LUA,
    RELEASE_LUA,
    RENEW_LUA,
    SETTLE_LUA,
    STORE_CASE_LUA,
    STORE_REPORT_LUA,
    STORE_RUN_LUA,
)
from farm.distributed.store.plans import PlanStore
from farm.distributed.store.progress import ProgressStore
from farm.errors import BrokerError
from farm.models import CaseStats, RunDetail, RunResult, RunStatus, SweepReport, run_status
from farm.plan.case_codec import CaseCodec
from farm.reports.details import attach_details
from farm.settings import DEFAULT_RESULT_TTL_S, safe_url

CONNECTION_ERRORS = (redis.ConnectionError, redis.TimeoutError)
MIN_REDIS = (6, 2)
"""The oldest Redis the store and the worker's transport run on (``RPOP key count``, ``BITFIELD``)."""


def too_old(version: str) -> bool:
    """Whether a ``redis_version`` (``7.0.15``) is older than ``MIN_REDIS``."""
    parts = [int(p) if p.isdigit() else 0 for p in version.split(".")[:2]]
    return tuple(parts + [0] * (2 - len(parts))) < MIN_REDIS

def connect(url: str, *, retries: int = 0) -> redis.Redis:
    """A Redis client; ``retries`` > 0 retries commands across a short outage (workers)."""
    retry = Retry(ExponentialBackoff(cap=4.0, base=0.25), retries) if retries else Retry(NoBackoff(), 0)
    return redis.Redis.from_url(
        url, decode_responses=True, socket_connect_timeout=5, socket_timeout=30,
        retry=retry, retry_on_error=list(CONNECTION_ERRORS), health_check_interval=30,
    )


STOP_FRESH_S = 0.5
"""A worker process reads a sweep's stop key at most this often as its runs begin (``begin_run``):
a run that begins within this of a stop elsewhere still runs, and counts, as one begun just
before the stop does."""

NEVER = 2**31
"""A planned-runs count no case reaches: the barrier's cases-done look is skipped."""


class SweepStore(PlanStore, ProgressStore, LifetimeStore, DeliveryStore):
    """Reads and writes sweeps in one Redis database (the plan: ``farm.distributed.store.plans``; what
    delivery keeps: ``farm.distributed.store.deliveries``)."""

    def __init__(self, client: redis.Redis, *, ttl: int = DEFAULT_RESULT_TTL_S) -> None:
        # Any: redis-py types every reply as "value or awaitable" (sync and asyncio share stubs).
        self.client: Any = client
        self.ttl = ttl
        self._store_run = client.register_script(STORE_RUN_LUA)
        self._settle = client.register_script(SETTLE_LUA)
        self._begin_run = client.register_script(BEGIN_RUN_LUA)
        self._store_case = client.register_script(STORE_CASE_LUA)
        self._store_report = client.register_script(STORE_REPORT_LUA)
        self._renew = client.register_script(RENEW_LUA)
        self._release = client.register_script(RELEASE_LUA)
        self._cursor = client.register_script(CURSOR_LUA)
        self._codecs: dict[str, CaseCodec] = {}
        self._stops: dict[str, tuple[float, str | None]] = {}

    @classmethod
    def from_url(cls, url: str, *, retries: int = 0, ttl: int = DEFAULT_RESULT_TTL_S) -> SweepStore:
        return cls(connect(url, retries=retries), ttl=ttl)

    def ping(self, what: str = "broker") -> None:
        """Raise BrokerError naming the server when it does not answer."""
        try:
            self.client.ping()
        except (*CONNECTION_ERRORS, redis.ResponseError, OSError) as exc:
            url = safe_url(_client_url(self.client))
            raise BrokerError(f"cannot reach the {what} at {url}: {exc}") from None

    def require_version(self) -> None:
        """Raise BrokerError unless the server is Redis ``MIN_REDIS`` or later: a sweep never
        starts on a server that would refuse its steps half-way (``RPOP key count``)."""
        try:
            version = str(self.client.info("server").get("redis_version", "0"))
        except redis.ResponseError:  # an ACL user without INFO (the compose file's): the steps tell
            return
        if too_old(version):
            url = safe_url(_client_url(self.client))
            raise BrokerError(f"the Redis at {url} is {version}; the farm needs Redis "
                              f"{'.'.join(map(str, MIN_REDIS))} or later")

    # ---------------------------------------------------------------------------- runs

    def store_run(self, sweep_id: str, result: RunResult, runs: int = 0) -> tuple[Tally | None, Settled]:
        """Store a run set-if-absent, stream it and settle it, in one step.

        The tally is None when that run was already counted; the barrier says where its case stands
        (whether the case is aggregated is asked only once its ``runs`` settled; 0: always).
        """
        cid = result.case_id
        passed = 1 if run_status(result.status) is RunStatus.PASSED else 0
        args: list[Any] = [result.model_dump_json(), self.ttl, cid, passed, result.run,
                           keys.run_field(cid, result.run), runs]
        names = [keys.run_key(sweep_id, cid, result.run), keys.cases_done_key(sweep_id),
                 keys.settled_key(sweep_id, cid), keys.running_key(sweep_id), keys.settled_count_key(sweep_id),
                 keys.stream_key(sweep_id), keys.dropped_key(sweep_id)]
        stored, counted, passes, first, settled, done, count = self._store_run(keys=names, args=args)
        barrier = Settled(bool(first), int(settled), bool(done), int(count))
        return (Tally(int(counted), int(passes)) if stored else None), barrier

    def settle(self, sweep_id: str, case_id: str, run: int, runs: int = 0) -> Settled:
        """Settle a run a worker began without storing it (dropped), or look again at a stored
        run's barrier; its running marker goes (``runs``: as ``store_run``)."""
        first, settled, done, count = self._settle(keys=self._settle_keys(sweep_id, case_id), args=[
            run, self.ttl, case_id, keys.run_field(case_id, run), time.time(), runs])
        return Settled(bool(first), int(settled), bool(done), int(count))

    @staticmethod
    def _settle_keys(sweep_id: str, case_id: str) -> list[str]:
        return [keys.settled_key(sweep_id, case_id), keys.cases_done_key(sweep_id), keys.settled_count_key(sweep_id),
                keys.running_key(sweep_id), keys.activity_key(sweep_id), keys.dropped_key(sweep_id)]

    def settle_many(self, sweep_id: str, runs: list[tuple[str, int]], *, chunk: int = 1000) -> None:
        """Settle runs that will never be published (a stopped sweep's rest), pipelined."""
        for first in range(0, len(runs), chunk):
            pipe = self.client.pipeline(transaction=False)
            for case_id, run in runs[first:first + chunk]:
                self._settle(keys=self._settle_keys(sweep_id, case_id), args=[run, self.ttl, case_id, "", 0, NEVER],
                             client=pipe)
            pipe.execute()

    def get_run(self, sweep_id: str, case_id: str, run: int) -> RunResult | None:
        text = self.client.get(keys.run_key(sweep_id, case_id, run))
        return None if text is None else RunResult.model_validate_json(str(text))

    def case_results(self, sweep_id: str, case_id: str, runs: int, *, chunk: int = 500) -> Iterator[RunResult]:
        """The stored results of a case's runs 1..runs, in order (missing ones left out)."""
        for first in range(1, runs + 1, chunk):
            names = [keys.run_key(sweep_id, case_id, n) for n in range(first, min(first + chunk, runs + 1))]
            for text in self.client.mget(names):
                if text is not None:
                    yield RunResult.model_validate_json(str(text))

    def begin_run(self, sweep_id: str, case_id: str, run: int, holder: str, *,
                  held_s: float | None = None) -> RunStart:
        """A worker begins a run, in one round trip: whether the run is stored already (any
        delivery asks: a first one's can be, ``begin_run.lua``), else its marker set (its lease
        starts now, the sweep is alive; ``holder`` is the worker process's heartbeat token, so a
        later delivery can tell whether it died with the run in flight), and the stop reason, read
        at most every ``STOP_FRESH_S`` per sweep in this process (a stop is final: once seen, kept;
        one this process sets is seen at once). ``store_run`` or ``settle`` clears the marker. A live
        holder's marker younger than ``held_s`` (None: any) makes this a duplicate (``RunStart``)."""
        seen = self._stops.get(sweep_id)
        now = time.monotonic()
        read = seen is None or (seen[1] is None and now - seen[0] >= STOP_FRESH_S)
        stop, stored, deaths, duplicate, in_flight = self._begin_run(
            keys=[keys.stop_key(sweep_id), keys.run_key(sweep_id, case_id, run), keys.running_key(sweep_id)],
            args=[keys.run_field(case_id, run), holder, keys.worker_alive_key(""), time.time(),
                  "1" if read else "0", "" if held_s is None else repr(float(held_s))])
        if read:
            self._seen_stop(sweep_id, stop or None, now)
        else:
            stop = seen[1] if seen is not None else None
        return RunStart(stop or None, bool(int(stored)), int(deaths), bool(int(duplicate)), max(1, int(in_flight)))

    def _seen_stop(self, sweep_id: str, reason: str | None, now: float) -> None:
        if len(self._stops) > 4096:
            self._stops.clear()
        self._stops[sweep_id] = (now, reason)

    # ------------------------------------------------------------------- cases, report

    def store_case(self, sweep_id: str, case_id: str, stats: CaseStats | None) -> int:
        """Mark a case done (storing and streaming its stats once); returns the cases done."""
        data = stats.model_dump_json() if stats is not None else ""
        names = [keys.cases_done_key(sweep_id), keys.stats_key(sweep_id), keys.stream_key(sweep_id)]
        return int(self._store_case(keys=names, args=[case_id, data, self.ttl]))

    def all_stats(self, sweep_id: str) -> dict[str, CaseStats]:
        """Every done case's statistics *without* its run details, read a few cases at a time: a
        report built from them stays small however many runs its cases kept (1,000 cases x 100
        runs: 100k run details). ``with_run_details`` lets its renderers read them case by case."""
        found: dict[str, CaseStats] = {}
        for cid, text in self.client.hscan_iter(keys.stats_key(sweep_id), count=50):
            if cid == keys.SENTINEL:
                continue
            data = json.loads(text)
            data["run_details"] = []
            found[cid] = CaseStats.model_validate(data)
        return found

    def case_run_details(self, sweep_id: str, case_id: str) -> list[RunDetail]:
        """One done case's kept run details (what ``all_stats`` leaves out)."""
        text = self.client.hget(keys.stats_key(sweep_id), case_id)
        return [] if not text else CaseStats.model_validate_json(str(text)).run_details

    def with_run_details(self, report: SweepReport) -> SweepReport:
        """``report``, its renderers reading each case's run details from this store as they write
        it (``farm.reports.details``); a case that carries its own keeps them."""
        sweep_id = report.envelope.sweep_id or ""
        attach_details(report, lambda stats: self.case_run_details(sweep_id, stats.planned_id))
        return report

    def claim_report(self, sweep_id: str, ttl_s: int = keys.REPORT_LATCH_TTL_S) -> bool:
        """The set-if-absent latch: True for the one caller that should enqueue ``farm.report``.

        It expires after ``ttl_s``: an aggregate that died between claiming and enqueuing is
        redelivered after the broker's visibility timeout and must find the latch gone by then.
        """
        return bool(self.client.set(keys.report_latch_key(sweep_id), "1", nx=True, ex=max(1, ttl_s)))

    def release_report(self, sweep_id: str) -> None:
        self.client.delete(keys.report_latch_key(sweep_id))

    def store_report(self, sweep_id: str, report: SweepReport) -> bool:
        """Store the report once, stream ``finish`` and take the sweep off the in-flight set."""
        names = [keys.report_key(sweep_id), keys.stream_key(sweep_id), keys.SWEEPS_IN_FLIGHT,
                 keys.stats_key(sweep_id), keys.cases_done_key(sweep_id)]
        return bool(self._store_report(keys=names, args=[report.model_dump_json(), self.ttl, sweep_id]))

    def get_report(self, sweep_id: str) -> SweepReport | None:
        """The stored report (stored without run details: they are read case by case as it is
        rendered, see ``with_run_details``)."""
        text = self.client.get(keys.report_key(sweep_id))
        return None if text is None else self.with_run_details(SweepReport.model_validate_json(str(text)))

    def has_report(self, sweep_id: str) -> bool:
        """Whether the sweep's report is stored (one EXISTS: the report is not read)."""
        return bool(self.client.exists(keys.report_key(sweep_id)))

    # ------------------------------------------------------------- stop, events, status

    def stop(self, sweep_id: str, reason: str) -> bool:
        """Drop the runs of a sweep that have not started; False if it was already stopped."""
        if not self.client.set(keys.stop_key(sweep_id), reason, nx=True, ex=self.ttl):
            self._stops.pop(sweep_id, None)  # stopped by someone else: read it again at the next run
            return False
        self._seen_stop(sweep_id, reason, time.monotonic())
        self.client.xadd(keys.stream_key(sweep_id), {"type": "stopped", "data": reason})
        return True

    def stop_reason(self, sweep_id: str) -> str | None:
        value = self.client.get(keys.stop_key(sweep_id))
        return None if value is None else str(value)

    def read_events(self, sweep_id: str, after: str, *, block_ms: int | None, count: int = 500) -> list[Event]:
        """Stream entries after id ``after`` (``0-0``: from the start), waiting up to ``block_ms``."""
        reply = self.client.xread({keys.stream_key(sweep_id): after}, count=count, block=block_ms)
        events = []
        for _stream, entries in reply or []:
            for entry_id, fields in entries:
                events.append(Event(entry_id, fields.get("type", ""), fields.get("data")))
        return events


def _client_url(client: redis.Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return f"unix://{kwargs['path']}"
    auth = ":***@" if kwargs.get("password") else ""
    return f"redis://{auth}{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"


def now_epoch() -> float:
    return time.time()
