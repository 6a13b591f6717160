"""Fleet control as a sweep's plan carries it: what the flags asked, resolved once, as data.

``FleetFlags`` holds the ``farm test`` flags as given (``--rate-limit``, ``--budget``,
``--max-tokens``, ``--adaptive[=sequential]``, ``--sprt``, ``--record``/``--replay``,
``--no-judge-cache``); ``farm.fleet.keys.plan_fleet`` checks them against the sweep's agents,
connectors and judges and makes a ``FleetPlan``. The plan crosses Redis inside the
``SweepPlan``, so a worker builds the same limiter, budget, caches and recorder as the submitter:
it holds limits, prices of the sweep's own keys and paths, never a secret or a database URL.
``BudgetLimit`` (``--budget``, ``--max-tokens``) and ``ReplayMode`` (``--record``, ``--replay``)
are declared here too: ``farm.fleet`` enforces what the plan declares and builds on it, never the
other way round. Pure: no I/O.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from farm.agents.ref import AgentRef
from farm.durations import parse_duration
from farm.errors import SettingsError
from farm.models import FarmModel, FleetFacts
from farm.models.base import empty_list
from farm.plan.rate_specs import LimitTable, RateLimit, parse_flag
from farm.stats.adaptive import AdaptiveKind, AdaptiveRule, parse_sprt
from farm.stats.prices import Price

DEFAULT_MAX_QUEUE_WAIT_S = 600.0


@dataclass(frozen=True)
class BudgetLimit:
    """A sweep's limits; None: no limit on that measure."""

    max_usd: float | None = None
    max_tokens: int | None = None

    def describe(self) -> str:
        parts = ([f"${self.max_usd:g}"] if self.max_usd is not None else []) + (
            [f"{self.max_tokens} tokens"] if self.max_tokens is not None else [])
        return " and ".join(parts) or "unlimited"


def parse_budget(max_usd: float | None, max_tokens: int | None) -> BudgetLimit:
    """The flags' values as a BudgetLimit.

    Raises:
        SettingsError: a budget that is not a positive number, or a token limit below 1.
    """
    if max_usd is not None and (isinstance(max_usd, bool) or not isinstance(max_usd, int | float)
                                or not math.isfinite(max_usd) or max_usd <= 0):
        raise SettingsError(f"--budget: expected an amount of USD greater than 0, got {max_usd!r}")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise SettingsError(f"--max-tokens: expected a whole number of tokens ≥ 1, got {max_tokens!r}")
    return BudgetLimit(float(max_usd) if max_usd is not None else None, max_tokens)


class ReplayMode(enum.StrEnum):
    """``--record`` or ``--replay``: what the recorder (``farm.fleet.replay``) does with a sweep's calls."""

    RECORD = "record"
    REPLAY = "replay"


@dataclass(frozen=True)
class FleetFlags:
    """The fleet-control flags of ``farm test`` as given (SPEC 13)."""

    rate_limits: tuple[str, ...] = ()
    """``--rate-limit KEY=SPEC[,SPEC…]``, repeatable."""
    budget_usd: float | None = None
    max_tokens: int | None = None
    adaptive: AdaptiveKind | None = None
    """``--adaptive`` (``exact``) or ``--adaptive=sequential``."""
    sprt: str | None = None
    """``--sprt P0,P1,ALPHA,BETA`` (sequential only)."""
    record: str | None = None
    replay: str | None = None
    judge_cache: bool = True
    """False: ``--no-judge-cache``."""
    max_queue_wait: str | float | None = None
    """``--max-queue-wait DURATION`` (default ``DEFAULT_MAX_QUEUE_WAIT_S``)."""

    @classmethod
    def from_flags(cls, flags: dict[str, Any]) -> FleetFlags:
        """Take (pop) the fleet flags out of ``farm test``'s flags (``farm.cli.fleet``)."""
        return cls(rate_limits=tuple(flags.pop("rate_limits", ()) or ()), budget_usd=flags.pop("budget", None),
                   max_tokens=flags.pop("max_tokens", None), adaptive=flags.pop("adaptive", None),
                   sprt=flags.pop("sprt", None), record=flags.pop("record", None),
                   replay=flags.pop("replay", None), judge_cache=not flags.pop("no_judge_cache", False),
                   max_queue_wait=flags.pop("max_queue_wait", None))

    def queue_wait_s(self) -> float:
        """``--max-queue-wait`` in seconds; SettingsError for a value that is not a duration."""
        if self.max_queue_wait is None:
            return DEFAULT_MAX_QUEUE_WAIT_S
        try:
            return parse_duration(self.max_queue_wait)
        except ValueError as exc:
            raise SettingsError(f"--max-queue-wait: {exc}") from None

    def budget(self) -> BudgetLimit | None:
        """``--budget`` / ``--max-tokens`` checked; None when neither is given."""
        if self.budget_usd is None and self.max_tokens is None:
            return None
        return parse_budget(self.budget_usd, self.max_tokens)

    def adaptive_rule(self) -> AdaptiveRule | None:
        """``--adaptive[=sequential]`` with ``--sprt``'s numbers; SettingsError for ``--sprt`` alone."""
        if self.sprt is not None and self.adaptive != "sequential":
            raise SettingsError("--sprt needs --adaptive=sequential (it states the sequential test's error rates)")
        if self.adaptive is None:
            return None
        if self.adaptive == "sequential" and self.sprt is not None:
            return parse_sprt(self.sprt)
        return AdaptiveRule(self.adaptive)

    def replay_spec(self) -> ReplaySpec | None:
        if self.record is not None and self.replay is not None:
            raise SettingsError("--record and --replay: give one (record a sweep, then replay it)")
        if self.record is None and self.replay is None:
            return None
        mode = ReplayMode.RECORD if self.record is not None else ReplayMode.REPLAY
        return ReplaySpec(directory=str(self.record or self.replay), mode=mode)

    def rate_table(self) -> dict[str, RateLimit]:
        return parse_flag(self.rate_limits)

    def parsed(self) -> FleetRequest:
        """Every flag checked and parsed, once (``farm.api.resolve_specs``): a bad one is exit 2
        before the suite is read."""
        return FleetRequest(budget=self.budget(), adaptive=self.adaptive_rule(), replay=self.replay_spec(),
                            limits=self.rate_table(), judge_cache=self.judge_cache,
                            max_queue_wait_s=self.queue_wait_s())


@dataclass(frozen=True)
class FleetRequest:
    """What the fleet flags ask, parsed (``FleetFlags.parsed``): ``plan_fleet`` checks it against
    the sweep's agents, connectors and judges."""

    budget: BudgetLimit | None = None
    adaptive: AdaptiveRule | None = None
    replay: ReplaySpec | None = None
    limits: dict[str, RateLimit] = field(default_factory=dict)
    judge_cache: bool = True
    max_queue_wait_s: float = DEFAULT_MAX_QUEUE_WAIT_S


@dataclass(frozen=True)
class ReplaySpec:
    """``--record DIR`` or ``--replay DIR`` (distributed: a directory every worker shares)."""

    directory: str
    mode: ReplayMode


class FleetPlan(FarmModel):
    """Fleet control of one sweep, resolved (the default: nothing limited, nothing recorded)."""

    limits: dict[str, RateLimit] = Field(default_factory=dict)
    """``--rate-limit``, by key (``*`` included)."""
    declared: dict[str, RateLimit] = Field(default_factory=dict)
    """``rate_limit`` of the ``package.yao`` / ``*.conn.yao`` files, by key."""
    budget: BudgetLimit | None = None
    prices: dict[str, Price] = Field(default_factory=dict)
    """The price of each key the sweep can call that has one (USD per million tokens)."""
    agent_keys: dict[str, str] = Field(default_factory=dict)
    """Each agent (``agent_ref_key``) → the rate-limit key its calls go under: its runs are priced by it."""
    unmetered: list[str] = Field(default_factory=empty_list)
    """Agents (``agent_ref_key``) whose calls never pass the transport (python, command): a budget
    is charged with their runs' usage after each run, and checked before it."""
    metered: list[str] = Field(default_factory=empty_list)
    """Keys whose calls always pass the limiter (connectors and judges): their usage is metered and
    a 429 slows every caller; other keys only when limited or under a budget."""
    adaptive: AdaptiveRule | None = None
    replay: ReplaySpec | None = None
    judge_cache: bool = True
    max_queue_wait_s: float = DEFAULT_MAX_QUEUE_WAIT_S
    """``--max-queue-wait``: the longest a call waits for its slot (SPEC 15)."""

    def limit_table(self) -> LimitTable:
        return LimitTable(self.limits, self.declared)

    def price_of(self, key: str) -> Price | None:
        return self.prices.get(key)

    def describe(self) -> FleetFacts | None:
        """What reports say about fleet control (only what was asked for; None: nothing was)."""
        described: dict[str, Any] = {}
        if self.adaptive is not None:
            described["adaptive"] = self.adaptive.kind
            described["adaptive_rule"] = self.adaptive.describe()
        if self.limits:
            described["rate_limits"] = {key: limit.describe() for key, limit in sorted(self.limits.items())}
        if self.replay is not None:
            described[self.replay.mode.value] = self.replay.directory
        if not self.judge_cache:
            described["judge_cache"] = False
        return FleetFacts.model_validate(described) if described else None


def agent_ref_key(ref: AgentRef) -> str:
    """One agent reference as a plain key (``AgentRef`` is not a JSON object key)."""
    key = f"{ref.kind}:{ref.target}#{ref.name}" if ref.name else f"{ref.kind}:{ref.target}"
    return f"{key}@{ref.arm_key}" if ref.arm_key else key

__all__ = ["FleetFlags", "FleetPlan", "FleetRequest", "ReplaySpec", "agent_ref_key"]
