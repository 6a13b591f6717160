"""Fleet control of one sweep in one process: the hooks every adapter gets, a scope per run, costs.

Made from the sweep's ``FleetPlan`` by the in-process executor (``local_runtime``: this
process's backends) and by each worker (``farm.distributed.fleet.runtime``: Redis backends every
worker shares). Both executors then do the same per run (``FleetRuntime.run``):

- the run's calls are charged to the sweep's budget and metered by role (``fleet_scope``);
- a call fleet control refused (budget, quota) leaves the run uncounted (``run`` returns None)
  and ``stopped`` says why, for the executor to stop the sweep (exit 4 / 5);
- the run's agent cost comes from the price table when its key has a price (else what the agent
  reported), its judges' usage and cost from the meter;
- an agent whose calls bypass the transport (python, command) is charged after its run.

The limiter is installed for a key's calls only where it does something: always for connectors
and judges (their usage is metered, and a 429 slows every caller), for other keys only when
they have a limit or a budget runs (each call through it costs: 66 µs in-process, ~1 ms on Redis).
Judges are wrapped, outermost first: metered as the judge's; recorded or replayed; cached.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from farm.agents.base import Agent
from farm.agents.hooks import AgentHooks
from farm.agents.judge import ConnectorJudge
from farm.agents.limiter import NO_LIMITER, CallLease, refused
from farm.agents.ref import AgentRef
from farm.checks.base import Judge
from farm.errors import FleetStop
from farm.fleet.budget import Budget, BudgetBackend, LocalBudgetBackend, Reservation
from farm.fleet.control import (
    JUDGE,
    FleetLimiter,
    FleetScope,
    FleetStoreError,
    JudgeRole,
    Refusal,
    UsageMeter,
    fleet_scope,
)
from farm.fleet.digests import digest_of
from farm.fleet.invocations import LimitedAgent
from farm.fleet.judge_cache import ARM_SCOPE, CachedJudge, MemoryVerdictCache, VerdictCache
from farm.fleet.limiter import RateBackend, RateLimiter
from farm.fleet.local_rates import LocalRateBackend
from farm.fleet.ratestate import AdaptivePolicy
from farm.models import BudgetFigures, ErrorInfo, RunResult, RunStatus
from farm.models.failure_class import classified
from farm.models.usage import Usage
from farm.plan.fleet import BudgetLimit, ReplayMode, agent_ref_key
from farm.plan.rate_specs import LimitTable
from farm.plan.sweep_plan import PlannedCase, SweepPlan
from farm.run.waiting import WaitListener, new_run_clock
from farm.stats.prices import Price

if TYPE_CHECKING:  # the recorder loads for a sweep with --record or --replay only (FleetRuntime)
    from farm.fleet.replay import ReplayStore

LEASE_MARGIN_S = 60.0
"""A concurrency lease outlives the longest case timeout by this much: a lease must outlive its call."""

LOCAL_RATES = LocalRateBackend()
"""Rate limits in this process: shared by every in-process sweep, as Redis shares them fleet-wide."""


class SelectiveLimiter:
    """The transport's limiter: fleet control for the keys that need it, nothing for the others."""

    def __init__(self, fleet: FleetLimiter, table: LimitTable, metered: frozenset[str], everything: bool) -> None:
        self.fleet = fleet
        self.table = table
        self.metered = metered
        self.everything = everything
        self._keys: dict[str, bool] = {}

    def meters(self, key: str) -> bool:
        found = self._keys.get(key)
        if found is None:
            found = self._keys[key] = self.everything or key in self.metered or not self.table.for_key(key).empty
        return found

    async def acquire(self, key: str, *, tokens: int = 0) -> CallLease:
        if self.meters(key):
            return await self.fleet.acquire(key, tokens=tokens)
        return await NO_LIMITER.acquire(key)


def priced_cost(result: RunResult, price: Price) -> float | None:
    """A run's agent cost by the price table: each answered turn's usage priced; a run that got no
    answer cost nothing; None when a turn's usage is unknown."""
    if result.turn_usage is None:
        return 0.0 if result.turns_completed == 0 else None
    costs = [price.cost(Usage(**counts)) for counts in result.turn_usage]
    return None if any(cost is None for cost in costs) else sum(c for c in costs if c is not None)


def _judge_id(name: str, judge: Judge) -> str:
    """What identifies a judge's verdicts: a connector judge is its connector and model."""
    if isinstance(judge, ConnectorJudge):
        return f"{judge.connector.id}:{judge.connector.model}"
    return name


def _agent_config(ref: AgentRef) -> str:
    """Digest of what configures an agent: a recording is replayed only for the same configuration."""
    files: dict[str, str] = {}
    if ref.kind == "manifest":
        for name in ("package.yao", "prompts.yml"):
            path = Path(ref.target) / name
            files[name] = path.read_text(encoding="utf-8") if path.is_file() else ""
    arm = {"arm": ref.arm_key} if ref.arm_key else {}  # a matrix arm's connector and options (SPEC 22)
    return digest_of({"kind": ref.kind, "label": ref.label, "name": ref.name, "files": files, **arm})


class FleetRuntime:
    """One sweep's fleet control in this process (thread-safe: worker threads share it)."""

    def __init__(self, sweep: SweepPlan, *, rates: RateBackend, budgets: BudgetBackend,
                 verdicts: VerdictCache | None) -> None:
        self.plan = plan = sweep.fleet
        table = plan.limit_table()
        # a lease outlives its call; waiters are served first come, first served (SPEC 15)
        policy = AdaptivePolicy(lease_ttl_s=sweep.max_case_timeout_s + LEASE_MARGIN_S, fair=True)
        rate_limiter = self.rates = RateLimiter(rates, table, policy, plan.max_queue_wait_s)
        self.table = table
        self.limiter = SelectiveLimiter(FleetLimiter(rate_limiter, plan.price_of), table, frozenset(plan.metered),
                                        everything=plan.budget is not None)
        self.budget = (Budget(budgets, sweep.sweep_id, plan.budget, probe_ttl_s=policy.lease_ttl_s)
                       if plan.budget is not None else None)
        self.verdicts = verdicts if plan.judge_cache else None
        self.replay: ReplayStore | None = None
        if plan.replay:
            from farm.fleet.replay import ReplayStore  # --record/--replay only: a plain sweep records nothing

            self.replay = ReplayStore(Path(plan.replay.directory), plan.replay.mode)
        self.unmetered = frozenset(plan.unmetered)
        limited = any(not table.for_key(plan.agent_keys.get(ref, "")).empty for ref in self.unmetered)
        self._bare = plan.budget is None and not plan.metered and set(plan.agent_keys) <= self.unmetered
        """No call of the sweep can pass the transport (python and command agents, no judge, no
        budget): nothing can be refused or metered, so a run needs no scope (saves ~6 µs a run)."""
        self.stopped: FleetStop | None = None
        """The first refusal: why the sweep must stop."""
        self.hooks = AgentHooks(limiter=self.limiter, wrap_agent=self._wrap_agent if self.replay or limited else None,
                                wrap_judge=self._wrap_judge,
                                replaying=self.replay is not None and self.replay.mode is ReplayMode.REPLAY)
        self.hooks_key = digest_of({"fleet": plan.model_dump(mode="json", exclude={"budget", "adaptive"}),
                                    "budget": plan.budget is not None, "lease_ttl_s": policy.lease_ttl_s})
        """Sweeps with equal keys may share adapters built with these hooks (a worker's pools): the
        budget and the scope of each run are the sweep's own, whichever runtime built the adapter."""

    def _wrap_agent(self, agent: Agent, ref: AgentRef) -> Agent:
        """A python or command agent held to its key's limits (``LimitedAgent``); recorded or
        replayed outside that (a replayed call waits for no slot)."""
        key = self.plan.agent_keys.get(agent_ref_key(ref))
        if key is not None and agent_ref_key(ref) in self.unmetered and not self.table.for_key(key).empty:
            agent = LimitedAgent(agent, self.rates, key)
        if self.replay is None:
            return agent
        from farm.fleet.replay import RecordReplayAgent  # loaded already with the store (__init__)

        return RecordReplayAgent(agent, self.replay, _agent_config(ref))

    def _wrap_judge(self, name: str, judge: Judge) -> Judge:
        judge_id = _judge_id(name, judge)
        recording = self.replay is not None and self.replay.mode is ReplayMode.RECORD
        if self.verdicts is not None and (self.replay is None or recording):  # a replay needs no cache
            judge = CachedJudge(judge, judge_id, self.verdicts)
        if self.replay is not None:
            from farm.fleet.replay import RecordReplayJudge  # as in _wrap_agent

            judge = RecordReplayJudge(judge, self.replay, name, digest_of(judge_id))
        return JudgeRole(judge)

    async def run(self, planned: PlannedCase, call: Callable[[], Awaitable[RunResult]],
                  waits: WaitListener | None = None) -> RunResult | None:
        """Make one run (``call``) under the sweep's fleet control; None when the run did not run:
        a call was refused before the run's first call (``stopped`` then says why the sweep must
        stop), or its first call got no slot within ``--max-queue-wait`` (the sweep goes on)."""
        scope = ARM_SCOPE.set(agent_ref_key(planned.agent) if planned.case.arm else "")
        try:
            with new_run_clock(waits) as clock:
                result = await self._run_clocked(planned, call)
        finally:
            ARM_SCOPE.reset(scope)
        if clock.starved and clock.calls == 0:
            return None  # waiting is not running: the farm's own queue never changes a verdict
        return result

    async def _run_clocked(self, planned: PlannedCase, call: Callable[[], Awaitable[RunResult]]) -> RunResult | None:
        if self._bare:
            return self._account(await call(), planned, None)
        return await self._run_scoped(planned, call)

    async def _run_scoped(self, planned: PlannedCase, call: Callable[[], Awaitable[RunResult]]) -> RunResult | None:
        scope = FleetScope(self.budget, UsageMeter(), Refusal())
        charged = self.budget is not None and agent_ref_key(planned.agent) in self.unmetered
        with fleet_scope(scope):
            result = await call() if not charged or await self._admit() else None
        assert scope.refusal is not None and scope.meter is not None
        refused = scope.refusal.error
        if refused is not None or result is None:
            if self.stopped is None:
                self.stopped = refused
            if result is None or refused is None or scope.refusal.calls_before <= 0:
                return None
            # refused after an earlier call: its paid calls stay
            return refused_after_calls(self._account(result, planned, scope.meter), refused)
        result = self._account(result, planned, scope.meter)
        if charged and self.budget is not None:
            tokens = Usage(**result.usage).total_tokens if result.usage else None
            try:
                await self.budget.settle(Reservation(0.0, 0), result.cost_usd, tokens)
            except Exception as exc:  # the agent ran (paid): its run stays, an error of the farm's
                return store_failed(result, FleetStoreError("BudgetStoreError", "charge the run to the budget", exc))
        return result

    @property
    def stop_reason(self) -> str:
        """``metadata.stopped`` once a call was refused: ``budget`` or ``quota``."""
        assert self.stopped is not None, "no call was refused"
        return self.stopped.stopped

    @property
    def stop_message(self) -> str:
        """What the refusal said (which budget, which provider)."""
        assert self.stopped is not None, "no call was refused"
        return self.stopped.message

    async def _admit(self) -> bool:
        """An unmetered agent's run may start while its sweep's budget is not exhausted."""
        assert self.budget is not None
        try:
            await self.budget.settle(await self.budget.reserve(0.0, 0), 0.0, 0)
        except FleetStop as error:
            refused(error)
            return False
        except Exception as exc:
            raise FleetStoreError("BudgetStoreError", "check the budget before the run", exc) from exc
        return True

    def _account(self, result: RunResult, planned: PlannedCase, meter: UsageMeter | None) -> RunResult:
        """``result`` with what it cost (the agent's calls at their price, the judges' calls)."""
        if RunStatus(result.status) is RunStatus.SKIPPED:
            return result
        costs: dict[str, Any] = {}
        price = self.plan.price_of(self.plan.agent_keys.get(agent_ref_key(planned.agent), ""))
        if price is not None:
            costs["cost_usd"] = priced_cost(result, price)
        judged = meter.totals(JUDGE) if meter is not None else None
        if judged is not None and judged.parts:
            costs |= {"judge_usage": judged.usage.to_dict(), "judge_cost_usd": judged.cost_usd}
        return result.model_copy(update=costs) if costs else result

    async def budget_figures(self) -> BudgetFigures | None:
        """The report's ``budget``: the limits and what was spent (None: the sweep has no budget)."""
        if self.budget is None:
            return None
        state = await self.budget.state()
        return budget_report(self.budget.limit, state.spent_usd, state.spent_tokens)


def _significant(usd: float) -> float:
    """Twelve significant digits (float noise off), not six decimals: a spend of $0.0000216 must
    read as the sweep's cost does, not as $0.000022 (issue 27)."""
    return float(f"{usd:.12g}")
def store_failed(result: RunResult, error: FleetStoreError) -> RunResult:
    """``result`` turned into an error run of the farm's (``error.failure_type``), its usage and cost kept."""
    return classified(result.model_copy(update={"status": RunStatus.ERROR,
                                                "error": ErrorInfo(type=error.failure_type, message=str(error))}))


def refused_after_calls(result: RunResult, refused: FleetStop) -> RunResult:
    """A run whose later call fleet control refused: an error run (``harness:budget``; a quota
    stop ``infra:quota``) that keeps what its earlier calls used and cost."""
    kind = "BudgetRefusedError" if refused.stopped == "budget" else type(refused).__name__
    error = ErrorInfo(type=kind, message=refused.message)
    return classified(result.model_copy(update={"status": RunStatus.ERROR, "error": error}))


def budget_report(limit: BudgetLimit, spent_usd: float, spent_tokens: int) -> BudgetFigures:
    """The report's ``metadata.budget``: the limits and what the sweep spent."""
    return BudgetFigures(max_usd=limit.max_usd, max_tokens=limit.max_tokens, spent_usd=_significant(spent_usd),
                         spent_tokens=spent_tokens)


def local_runtime(sweep: SweepPlan) -> FleetRuntime:
    """The in-process sweep's fleet control: rates shared by this process, its own budget and cache."""
    return FleetRuntime(sweep, rates=LOCAL_RATES, budgets=LocalBudgetBackend(), verdicts=MemoryVerdictCache())


__all__ = ["LEASE_MARGIN_S", "LOCAL_RATES", "FleetRuntime", "SelectiveLimiter", "budget_report", "local_runtime",
           "priced_cost", "refused_after_calls", "store_failed"]
