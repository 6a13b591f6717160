"""Fleet control behind the transport's one seam: budget, rate limits and usage, per call.

``FleetLimiter`` is the ``CallLimiter`` the agent pool hands the transport. For each attempt:

1. the sweep's budget (if any) reserves the call's most (``Budget.reserve``: may raise
   ``BudgetExhaustedError``), before the call waits for anything;
2. the key's rate limits grant it (``RateLimiter.acquire``: may raise ``QuotaExhaustedError``);
3. on release, the rate lease settles its tokens and reacts to a 429; the budget settles the
   real cost (price table, else what the provider reported); the run's usage meter (if any)
   counts the call's usage and cost under the caller's role (``agent`` or ``judge``).

The budget and the meter belong to a sweep and a run, while one limiter serves every sweep of a
worker process; ``fleet_scope`` (a context variable) says which sweep and run the calls of the
current task belong to, and ``call_role("judge")`` marks judge calls. Pure: no Redis import
(the backends are handed in).

A refused call (budget, quota) raises, and also notes the refusal in the run's ``Refusal``
(through the agents' limiter seam, ``farm.agents.limiter.refused``: the transport tells it of a
quota answer without importing fleet control, and ``fleet_scope`` sets the run's ``Refusal`` there):
adapters, judges and checks turn exceptions into run errors or equivocal verdicts, so the
executor does not count on the exception reaching it. After each run it asks
``scope.refusal.error``: set, the run is not counted (it is "not run") and the sweep stops with
``metadata.stopped = error.stopped``.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass

from farm.agents.limiter import REFUSAL_NOTE, RefusalNote, refused
from farm.checks.base import Judge, JudgeVerdict
from farm.errors import FleetStop
from farm.fleet.budget import Budget, Reservation
from farm.fleet.limiter import RateLease, RateLimiter
from farm.models import JsonValue
from farm.models.usage import Usage, UsageTotals, parse_usage, reported_cost
from farm.run.waiting import granted, run_clock, waiting
from farm.stats.prices import Price, call_cost

AGENT, JUDGE = "agent", "judge"


class UsageMeter:
    """Usage and cost of one run's calls by role (thread-safe: calls may end on other threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, UsageTotals] = {}

    def add(self, role: str, usage: Usage | None, cost_usd: float | None) -> None:
        with self._lock:
            self._totals.setdefault(role, UsageTotals()).add(usage, cost_usd)

    def used(self, role: str) -> bool:
        """Whether a call under ``role`` was counted (most runs call no judge: no totals to copy)."""
        return role in self._totals  # a dict's membership is read atomically: no lock

    def totals(self, role: str) -> UsageTotals:
        with self._lock:
            found = self._totals.get(role)
            copy = UsageTotals()
            if found is not None:
                copy.merge(found)
            return copy


class FleetStoreError(Exception):
    """A step of fleet control's own bookkeeping failed (its store unreachable after the retries, a
    script error): the run is an error run of ``failure_type`` (``BudgetStoreError`` is
    ``harness:budget``, ``QueueStoreError`` ``harness:queue_wait``), never lost."""

    def __init__(self, failure_type: str, step: str, error: BaseException) -> None:
        super().__init__(f"fleet control could not {step}: {type(error).__name__}: {error}")
        self.failure_type = failure_type


class Refusal:
    """Whether fleet control refused a call of one run: the first refusal is kept."""

    def __init__(self) -> None:
        self.error: FleetStop | None = None
        self.calls_before = 0
        """Calls of the run made before the refused one: some, and the run is an error run that
        keeps them (SPEC 15); none, and the run did not run."""

    def note(self, error: FleetStop, calls_before: int = 0) -> None:
        if self.error is None:
            self.error = error
            self.calls_before = calls_before

    def refused(self, error: FleetStop, *, answered: bool) -> None:
        """The seam's note (``farm.agents.limiter.refused``), the run's calls so far counted by its
        clock; ``answered``: the refused call was made (a quota answer), so it is not one before."""
        clock = run_clock()
        made = clock.calls if clock is not None else 0
        self.note(error, made - 1 if answered else made)


@dataclass(frozen=True)
class FleetScope:
    """What the calls of the current task are charged to, and where a refusal is noted."""

    budget: Budget | None = None
    meter: UsageMeter | None = None
    refusal: Refusal | None = None


NO_SCOPE = FleetScope()
_SCOPE: ContextVar[FleetScope | None] = ContextVar("farm_fleet_scope", default=None)
_ROLE: ContextVar[str] = ContextVar("farm_fleet_role", default=AGENT)


class fleet_scope:  # lower case: used as ``with fleet_scope(scope):``, once per run (no generator's cost)
    """Charge the calls made inside the block (and tasks started in it) to ``scope``."""

    __slots__ = ("_noting", "_scope", "_token")

    def __init__(self, scope: FleetScope) -> None:
        self._scope = scope
        self._token: Token[FleetScope | None] | None = None
        self._noting: Token[RefusalNote | None] | None = None

    def __enter__(self) -> FleetScope:
        self._token = _SCOPE.set(self._scope)
        self._noting = REFUSAL_NOTE.set(self._scope.refusal)  # where the seam's ``refused`` notes
        return self._scope

    def __exit__(self, *_exc: object) -> None:
        assert self._token is not None and self._noting is not None
        REFUSAL_NOTE.reset(self._noting)
        _SCOPE.reset(self._token)


@contextlib.contextmanager
def call_role(role: str) -> Iterator[None]:
    """Count the calls made inside the block under ``role`` (``judge`` for judge calls)."""
    token = _ROLE.set(role)
    try:
        yield
    finally:
        _ROLE.reset(token)


class JudgeRole:
    """A ``Judge`` whose calls count as the judge's (``summary.judge_usage``), not the agent's."""

    def __init__(self, inner: Judge) -> None:
        self.inner = inner

    async def judge(self, *, criterion: str, actual: JsonValue, input: JsonValue) -> JudgeVerdict:
        with call_role(JUDGE):
            return await self.inner.judge(criterion=criterion, actual=actual, input=input)


@dataclass
class FleetLease:
    """One call's budget reservation and rate lease; ``release`` settles both, once."""

    key: str
    price: Price | None
    scope: FleetScope
    role: str
    reservation: Reservation | None = None
    rate_lease: RateLease | None = None
    released: bool = False
    estimated: bool = False
    """The budget reservation is ``Budget.estimate``'s: its settled cost teaches the next estimate."""
    probe_token: str | None = None
    """This call is its key's cost probe (the claim's token): its settling ends the probe."""

    async def release(self, *, status: int | None, retry_after_s: float | None,
                      usage: dict[str, int] | None) -> None:
        if self.released:
            return
        self.released = True
        parsed = parse_usage(usage)
        cost = call_cost(parsed, self.price, reported_cost(usage))
        try:
            if self.rate_lease is not None:
                await self.rate_lease.release(status=status, retry_after_s=retry_after_s, usage=usage)
        finally:
            if self.reservation is not None and self.scope.budget is not None:
                tokens = parsed.total_tokens if parsed is not None else None
                if self.estimated:
                    await self.scope.budget.learn(self.key, cost, self.probe_token)
                await self.scope.budget.settle(self.reservation, cost, tokens)
            if self.scope.meter is not None and status is not None:
                self.scope.meter.add(self.role, parsed, cost)


class FleetLimiter:
    """The transport's ``CallLimiter``: budget first, then rate limits; settles both after."""

    def __init__(self, rates: RateLimiter | None = None,
                 price_of: Callable[[str], Price | None] = lambda key: None) -> None:
        self.rates = rates
        self.price_of = price_of

    async def acquire(self, key: str, *, tokens: int = 0) -> FleetLease:
        """Reserve the call's most against the sweep's budget, then wait for the key's limits.

        Raises:
            BudgetExhaustedError: the reservation would pass the sweep's budget.
            QuotaExhaustedError: the key's provider keeps answering 429.
        """
        scope, price = _SCOPE.get() or NO_SCOPE, self.price_of(key)
        lease = FleetLease(key, price, scope, _ROLE.get())
        try:
            async with waiting():  # the run's clocks stop while the call queues (farm.run.waiting)
                if scope.budget is not None:
                    most = price.most(tokens) if price else 0.0
                    lease.estimated = scope.budget.limit.max_usd is not None
                    if lease.estimated:  # at least the dearest call of the key so far (max_tokens unknown)
                        wait_s = self.rates.max_wait_s if self.rates is not None else math.inf
                        estimated, lease.probe_token = await scope.budget.estimate_probe(
                            key, probe=not tokens, max_wait_s=wait_s)
                        most = max(most, estimated)
                    lease.reservation = await scope.budget.reserve(
                        most, tokens, probe=key if lease.probe_token is not None else None)
                if self.rates is not None:
                    lease.rate_lease = await self.rates.acquire(key, tokens=tokens)
        except FleetStop as error:
            await self._give_back(lease)
            raise refused(error) from None
        except BaseException:
            await self._give_back(lease)
            raise
        granted()
        return lease

    @staticmethod
    async def _give_back(lease: FleetLease) -> None:
        if lease.estimated and lease.scope.budget is not None:
            await lease.scope.budget.learn(lease.key, None, lease.probe_token)  # never sent: the next probes
        if lease.reservation is not None and lease.scope.budget is not None:
            await lease.scope.budget.settle(lease.reservation, 0.0, 0)  # never sent: nothing spent

    async def aclose(self) -> None:
        if self.rates is not None:
            await self.rates.aclose()
