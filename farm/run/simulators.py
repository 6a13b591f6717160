"""The simulated users of dynamic cases: agents, the built-in LLM simulator, scripted replies.

A case's ``simulator.use`` is either an agent reference, resolved like ``-n`` (a Yao agent id such
as ``tests.simulator-agent``, ``py:…``, ``http://…``, ``cmd:…``), or ``llm:<connector>``: the
built-in LLM simulator, one chat completion on that connector per turn, told to answer Yao's
``{"message", "goal_achieved"}``. ``options.connector`` sets a prompt-agent simulator's
connector. ``fixed_responses`` are played first (``farm.run.dynamic.ScriptedSimulator``); a
simulator with only those needs no agent at all.

``SimulatorPool`` is what executors pass to ``execute_run(simulators=…)``: it builds one fresh
simulator per run (scripted ones keep their place) over adapters and connectors shared by the
sweep, and ``aclose`` releases them. The sweep's ``AgentHooks`` reach the simulators as they reach
the agent under test: fleet control's limiter admits their calls (rate limits, 429 back-off, the
budget) and record/replay wraps an agent simulator.
"""

from __future__ import annotations

import json
import operator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from farm.agents.base import Agent, consulting_request
from farm.agents.hooks import NO_HOOKS, AgentHooks
from farm.agents.options import AgentOptions
from farm.agents.resolve import AgentPool, parse_reference
from farm.errors import AgentResolutionError
from farm.models import Case, JsonValue, Reply, SimulatorSpec
from farm.run.dynamic import ScriptedSimulator, Simulator

if TYPE_CHECKING:
    from farm.agents.connectors import Connector, ConnectorRegistry

__all__ = ["LLM_PREFIX", "SIMULATOR_PROMPT", "SimulatorPool", "check_simulators", "create_simulator_pool"]

LLM_PREFIX = "llm:"
"""``simulator.use`` (and ``--simulator``) ``llm:<connector>``: the built-in LLM simulator."""
LLM_TEMPERATURE = 0.7
"""As Yao's bundled simulator agent: a simulated user varies its wording from run to run."""
SIMULATOR_PROMPT = (
    "You are a user simulator: you play the user in a test conversation with an AI assistant. You get a "
    "JSON object: 'persona' says who you are, 'goal' what you want to achieve, 'conversation' the messages "
    "so far, 'turn_number' and 'max_turns' where you are, 'checkpoints_reached' and 'checkpoints_pending' "
    "what the assistant has done, 'extra' further details. Write the user's next message, in character and "
    "working toward the goal. Answer with JSON only: {\"message\": \"<the user's next message>\", "
    "\"goal_achieved\": false}. Once the goal is achieved, answer with a closing message and "
    "\"goal_achieved\": true."
)


class AgentSimulator:
    """An agent plays the user: the simulator input is one user message holding JSON (Yao)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    async def ask(self, request: dict[str, JsonValue]) -> Reply:
        message = {"role": "user", "content": json.dumps(request, ensure_ascii=False)}
        return await self.agent.respond(consulting_request([message], "simulator", {"test_mode": "simulator"}))


class LLMSimulator:
    """The built-in simulator: the prompt above and the input JSON, one completion per turn."""

    def __init__(self, connector: Connector) -> None:
        self.connector = connector

    async def ask(self, request: dict[str, JsonValue]) -> Reply:
        messages = [{"role": "system", "content": SIMULATOR_PROMPT},
                    {"role": "user", "content": json.dumps(request, ensure_ascii=False)}]
        return await self.connector.chat(messages, temperature=LLM_TEMPERATURE)


class SimulatorPool:
    """Builds the simulator of each run from its spec, over adapters shared by the sweep."""

    def __init__(self, options: AgentOptions, hooks: AgentHooks = NO_HOOKS) -> None:
        self.options = options
        self.hooks = hooks
        self._pools: dict[str | None, AgentPool] = {}
        self._connectors: ConnectorRegistry | None = None

    def __call__(self, spec: SimulatorSpec) -> Simulator:
        """A fresh simulator for one run.

        Raises:
            AgentResolutionError: the agent or connector named cannot be found.
        """
        driver = self._driver(spec) if spec.use is not None else None
        if spec.fixed_responses:
            return ScriptedSimulator(spec.fixed_responses, driver)
        if driver is None:
            raise AgentResolutionError("simulator: give 'use' (an agent, or llm:<connector>) or 'fixed_responses'")
        return driver

    def _driver(self, spec: SimulatorSpec) -> Simulator:
        assert spec.use is not None
        if spec.use.startswith(LLM_PREFIX):
            return LLMSimulator(self._connector(spec.use[len(LLM_PREFIX):]))
        # options.connector is the simulator's own connector (a prompt agent's), as in Yao.
        options = replace(self.options, connector=spec.connector) if spec.connector else self.options
        pool = self._pools.get(spec.connector)
        if pool is None:
            pool = self._pools[spec.connector] = AgentPool(options, self.hooks)
        try:
            return AgentSimulator(pool.get(parse_reference(spec.use, options)))
        except AgentResolutionError as exc:
            raise AgentResolutionError(f"simulator {spec.use}: {exc.message}") from None

    def _connector(self, name: str) -> Connector:
        from farm.agents.connectors import load_connectors  # its HTTP transport, only for an llm: simulator

        try:
            with self.hooks.building():
                if self._connectors is None:
                    self._connectors = load_connectors(Path(self.options.connectors_root), limiter=self.hooks.limiter)
                return self._connectors.get(name)
        except AgentResolutionError as exc:
            raise AgentResolutionError(f"simulator {LLM_PREFIX}{name}: {exc.message}") from None

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()
        if self._connectors is not None:
            await self._connectors.aclose()


def create_simulator_pool(options: AgentOptions, hooks: AgentHooks = NO_HOOKS) -> SimulatorPool:
    """The simulators of a sweep (adapters built on first use), with the sweep's hooks."""
    return SimulatorPool(options, hooks)


_DYNAMIC = operator.attrgetter("dynamic")


def check_simulators(cases: list[Case], options: AgentOptions) -> None:
    """Build every simulator the dynamic cases name, so a bad one exits 2 before any run.

    Raises:
        AgentResolutionError: naming the case's file and line and what is wrong.
    """
    if not any(map(_DYNAMIC, cases)):  # most batches: no dynamic case (a model is always true), found in C
        return
    pool = SimulatorPool(options)
    for case in cases:
        if case.dynamic is None or case.skip:
            continue
        try:
            pool(case.dynamic.simulator)
        except AgentResolutionError as exc:
            where = f"{case.source}:{case.line}" if case.line else case.source or case.id
            raise AgentResolutionError(f"{where}: simulator: {exc.message}") from None
