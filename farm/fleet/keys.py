"""Which rate-limit keys a sweep can call, their prices and declared limits: the ``FleetPlan``.

Called by ``farm.api.prepare_sweep`` once every agent and judge is built, before anything
runs, so a wrong flag, price file or declaration is exit 2 with nothing called. A call's key is
the one the transport uses (``farm.agents.transport``): the connector id for a prompt agent and a
connector judge, the judge's name for an ``agents:`` judge, the agent id for the other agents.
A prompt agent's ``package.yao`` ``rate_limit`` applies to its connector's key (its calls are
its connector's), unless the connector declares its own. ``--budget`` needs a price for every
key (SPEC 13): an unpriced one is named with the fix.

It lives with fleet control, not with the plan it fills: it opens the ``--record``/``--replay``
directory (``farm.fleet.replay``, loaded then only) to refuse a bad one before anything runs.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from farm.agents.base import Agent
from farm.agents.judge import AgentJudge, ConnectorJudge, JudgeResolver
from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.agents.registry import AdapterSpec
from farm.defaults import PRICES_ENV
from farm.errors import SettingsError
from farm.plan.fleet import FleetPlan, FleetRequest, ReplaySpec, agent_ref_key
from farm.plan.rate_specs import RateLimit, declared_limit
from farm.stats.prices import Price, PriceTable

if TYPE_CHECKING:
    from farm.agents.connectors import Connector

UNMETERED_TYPES = ("python", "command")
"""Adapters whose calls never pass the transport: the farm sees their usage only in their replies.
Their rate limits bind each invocation (``farm.fleet.invocations``); a budget charges their runs."""


@dataclass
class _Keys:
    """What the sweep's agents and judges call, collected."""

    table: PriceTable
    prices: dict[str, Price] = field(default_factory=dict)
    unpriced: dict[str, str] = field(default_factory=dict)
    """Key → what it is (for the --budget message)."""
    declared: dict[str, RateLimit] = field(default_factory=dict)
    metered: set[str] = field(default_factory=set)

    def price(self, key: str, what: str, *names: str | None) -> None:
        found = self.table.price(key, *names)
        if found is None:
            self.unpriced[key] = what
        else:
            self.prices[key] = found

    def declare(self, key: str, data: Mapping[str, object], where: str, *, wins: bool = True) -> None:
        limit = declared_limit(data, where=where)
        if limit is not None and not limit.empty and (wins or key not in self.declared):
            self.declared[key] = limit

    def connector(self, connector: Connector, what: str) -> str:
        self.price(connector.id, f"{what} (connector {connector.id}, model {connector.model})", connector.model)
        if connector.source:  # its file's rate_limit, read with it
            self.declare(connector.id, {"rate_limit": connector.rate_limit}, connector.source)
        self.metered.add(connector.id)
        return connector.id


def _is_connector(value: object) -> TypeGuard[Connector]:
    """Whether ``value`` is a connector. None exists until ``farm.agents.connectors`` is imported
    (by whatever built it), and a sweep without one does not import that module (its transport)."""
    module = sys.modules.get("farm.agents.connectors")
    return module is not None and isinstance(value, module.Connector)


def _agent_key(keys: _Keys, ref: AgentRef, agent: Agent, spec: AdapterSpec) -> tuple[str, bool]:
    """The key of the agent's calls, and whether they bypass the transport (unmetered)."""
    connector = getattr(agent, "connector", None)
    if spec.type == "prompt" and _is_connector(connector):
        key = keys.connector(connector, f"agent {agent.id}")
        keys.declare(key, spec.manifest, spec.where, wins=False)
        return key, False
    keys.price(agent.id, f"agent {agent.id}", ref.label)
    keys.declare(agent.id, spec.manifest, spec.where)
    return agent.id, spec.type in UNMETERED_TYPES


def _judge_key(keys: _Keys, name: str, judge: object) -> None:
    if isinstance(judge, ConnectorJudge):
        keys.connector(judge.connector, f"judge {name}")
    elif isinstance(judge, AgentJudge):
        inner = getattr(judge.agent, "connector", None)
        names = (inner.id, inner.model) if _is_connector(inner) else ()
        keys.price(name, f"judge {name}", judge.agent.id, *names)
        keys.metered.add(name)


def plan_fleet(request: FleetRequest, agents: Mapping[AgentRef, Agent], specs: Mapping[AgentRef, AdapterSpec],
               judges: JudgeResolver, judge_uses: Iterable[str | None], options: AgentOptions) -> FleetPlan:
    """The sweep's ``FleetPlan``; ``agents`` (built from ``specs``) and ``judges`` are the ones
    ``prepare_sweep`` built.

    Raises:
        SettingsError: a bad flag or price file, an unpriced key under ``--budget``, a replay
            directory that does not exist.
    """
    budget, replay = request.budget, request.replay
    if replay is not None:  # checked now (and the record directory made): exit 2 before any run
        from farm.fleet.replay import ReplayStore  # --record/--replay only: a plain sweep loads no recorder

        store = ReplayStore.open(Path(options.cwd) / Path(replay.directory).expanduser(), replay.mode)
        replay = ReplaySpec(directory=str(store.directory.resolve()), mode=replay.mode)
    keys = _Keys(PriceTable.from_env())
    agent_keys: dict[str, str] = {}
    unmetered: list[str] = []
    for ref, agent in agents.items():
        agent_keys[agent_ref_key(ref)], bypasses = _agent_key(keys, ref, agent, specs[ref])
        if bypasses:
            unmetered.append(agent_ref_key(ref))
    for use in dict.fromkeys(judge_uses):
        name = use if use is not None else options.judge
        if name:
            _judge_key(keys, name, judges(use))
    if budget is not None and budget.max_usd is not None and keys.unpriced:
        unpriced = "; ".join(f"{key} ({what})" for key, what in sorted(keys.unpriced.items()))
        raise SettingsError(f"--budget: no price for {unpriced}: a budget cannot be kept without one; add it to "
                            f"a price file named by {PRICES_ENV} ({{\"models\": {{\"NAME\": {{\"input\": USD, "
                            "\"output\": USD}}}, USD per million tokens)")
    return FleetPlan(limits=request.limits, declared=keys.declared, budget=budget, prices=keys.prices,
                     agent_keys=agent_keys, unmetered=unmetered, metered=sorted(keys.metered),
                     adaptive=request.adaptive, replay=replay, judge_cache=request.judge_cache,
                     max_queue_wait_s=request.max_queue_wait_s)


__all__ = ["UNMETERED_TYPES", "plan_fleet"]
