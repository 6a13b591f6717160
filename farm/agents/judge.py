"""LLM judges for ``gist``/``not_gist`` and ``agent`` checks (SPEC 4.2).

A judge is a connector (``--judge CONNECTOR``, or an assertion's ``use``) or an agent
(``use: agents:<agent id>``), asked at temperature 0 to answer ``{"passed": bool, "reason":
str}``; its answer is read strictly by ``farm.checks.judged.parse_verdict``. A judge never
raises: a failed call is an ``error`` verdict whose reason says what went wrong (not
``equivocal``: a judge that cannot be reached is not a judge that could not decide).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from farm.agents.base import Agent, consulting_request
from farm.agents.hooks import NO_HOOKS, AgentHooks
from farm.agents.limiter import KeyedLimiter
from farm.agents.options import AgentOptions
from farm.agents.secrets import redact
from farm.checks.base import Judge, JudgeVerdict
from farm.checks.judged import parse_verdict
from farm.errors import AgentResolutionError
from farm.models import JsonValue, Reply

if TYPE_CHECKING:
    from farm.agents.connectors import Connector, ConnectorRegistry

AGENT_PREFIX = "agents:"
NO_JUDGE = "no judge: pass --judge CONNECTOR"
SYSTEM_PROMPT = (
    "You are a strict test judge. You get a JSON object: 'output' is what an AI agent produced, "
    "'input' what it was sent, 'criteria' the criterion. Decide whether the output meets the "
    "criterion; the input is context only. Answer with JSON only, exactly "
    '{"passed": true, "reason": "<one sentence>"} or {"passed": false, "reason": "<one sentence>"}.'
)


def judge_messages(criterion: str, actual: JsonValue, input: JsonValue) -> list[dict[str, Any]]:
    """The conversation a judge is given: ``{output, input, criteria}`` as JSON (SPEC 4.2)."""
    user = json.dumps({"output": actual, "input": input, "criteria": criterion}, ensure_ascii=False)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def verdict_of(reply: Reply) -> JudgeVerdict:
    """The verdict in a judge's reply: its text, else its structure as JSON."""
    if reply.text is not None and reply.text.strip():
        return parse_verdict(reply.text)
    if reply.structure is not None:
        return parse_verdict(json.dumps(reply.structure))
    return parse_verdict("")


async def verdict_of_call(call: Awaitable[Reply]) -> JudgeVerdict:
    """The verdict of a judge's call; never raises: a call that failed is an ``error`` verdict."""
    try:
        reply = await call
    except Exception as exc:
        return JudgeVerdict("error", reason=redact(f"judge error: {exc}"))
    return verdict_of(reply)


class ConnectorJudge:
    """A judge that is one chat completion at temperature 0."""

    def __init__(self, connector: Connector) -> None:
        self.connector = connector

    async def judge(self, *, criterion: str, actual: JsonValue, input: JsonValue) -> JudgeVerdict:
        messages = judge_messages(criterion, actual, input)
        return await verdict_of_call(self.connector.chat(messages, temperature=0, conversation=None))


class AgentJudge:
    """A judge that is an agent: it gets the judge conversation as one turn."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    async def judge(self, *, criterion: str, actual: JsonValue, input: JsonValue) -> JudgeVerdict:
        request = consulting_request(judge_messages(criterion, actual, input), "judge")
        return await verdict_of_call(self.agent.respond(request))


class JudgeResolver:
    """Finds judges by ``use`` and keeps them for the sweep (``aclose`` releases their clients)."""

    def __init__(self, options: AgentOptions, hooks: AgentHooks = NO_HOOKS) -> None:
        self.options = options
        self.hooks = hooks
        self._judges: dict[str | None, Judge] = {}
        self._connectors: ConnectorRegistry | None = None
        self._agents: list[Agent] = []
        self._lock = threading.Lock()

    def __call__(self, use: str | None) -> Judge:
        """The judge for ``use``: None → ``--judge``, a connector id, or ``agents:<agent id>``.

        Raises:
            AgentResolutionError: no judge configured, or the connector/agent cannot be found.
        """
        with self._lock:
            if use not in self._judges:
                self._judges[use] = self._create(use)
            return self._judges[use]

    def _create(self, use: str | None) -> Judge:
        name = use if use is not None else self.options.judge
        if not name:
            raise AgentResolutionError(NO_JUDGE)
        judge = self._agent_judge(name) if name.startswith(AGENT_PREFIX) else self._connector_judge(name)
        return self.hooks.wrap_judge(name, judge) if self.hooks.wrap_judge is not None else judge

    def _agent_judge(self, name: str) -> Judge:
        from farm.agents.resolve import create_agent, parse_reference  # resolve imports adapters

        hooks = self.hooks  # every call of this judge counts under its name (transport docstring)
        if hooks.limiter is not None:
            hooks = replace(hooks, limiter=KeyedLimiter(hooks.limiter, name))
        if hooks.wrap_judge is not None:  # the judge is wrapped as a judge, not its agent as well
            hooks = replace(hooks, wrap_agent=None)
        agent = create_agent(parse_reference(name[len(AGENT_PREFIX) :], self.options), self.options, hooks)
        self._agents.append(agent)
        return AgentJudge(agent)

    def _connector_judge(self, name: str) -> Judge:
        from farm.agents.connectors import load_connectors  # its HTTP transport, only when a judge is named

        with self.hooks.building():
            if self._connectors is None:
                self._connectors = load_connectors(Path(self.options.connectors_root), limiter=self.hooks.limiter)
            return ConnectorJudge(self._connectors.get(name))

    def rehooked(self, hooks: AgentHooks) -> JudgeResolver:
        """This resolver's judges wrapped by ``hooks`` (fleet control's), which also build the
        judges asked for from now on: a sweep's judges are built once, to be checked, before the
        fleet plan that wraps them is known (``farm.agents.built``). They share their clients:
        close one of the two resolvers."""
        resolver = JudgeResolver(self.options, hooks)
        with self._lock:
            resolver._connectors, resolver._agents = self._connectors, self._agents
            for use, judge in self._judges.items():
                name = use if use is not None else self.options.judge
                assert name  # a judge without a name was never built
                resolver._judges[use] = hooks.wrap_judge(name, judge) if hooks.wrap_judge is not None else judge
        return resolver

    async def aclose(self) -> None:
        if self._connectors is not None:
            await self._connectors.aclose()
        for agent in self._agents:
            await agent.aclose()


def create_judge_resolver(options: AgentOptions, hooks: AgentHooks = NO_HOOKS) -> JudgeResolver:
    """The judges of a sweep, created on first use with this process's ``hooks``."""
    return JudgeResolver(options, hooks)
