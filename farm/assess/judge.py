"""The judge of ``farm assess --judge``: a connector id, or ``agents:<agent id>``, asked at temperature 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from farm.agents.base import Agent, consulting_request
from farm.agents.connectors import Connector, load_connectors
from farm.agents.judge import AGENT_PREFIX
from farm.agents.options import AgentOptions
from farm.agents.resolve import create_agent, parse_reference
from farm.errors import FarmRuntimeError

__all__ = ["create_mode_judge"]


class ConnectorModeJudge:
    """One chat completion per distinct failure."""

    def __init__(self, name: str, connector: Connector) -> None:
        self.name = name
        self.connector = connector

    async def answer(self, messages: list[dict[str, Any]]) -> str:
        try:
            return (await self.connector.chat(messages, temperature=0)).as_text()
        except Exception as exc:
            raise FarmRuntimeError(f"judge {self.name}: {getattr(exc, 'message', None) or exc}") from None

    async def aclose(self) -> None:
        await self.connector.aclose()


class AgentModeJudge:
    """An agent judge: the assessment conversation as one turn."""

    def __init__(self, name: str, agent: Agent) -> None:
        self.name = name
        self.agent = agent

    async def answer(self, messages: list[dict[str, Any]]) -> str:
        try:
            return (await self.agent.respond(consulting_request(messages, "assess"))).as_text()
        except Exception as exc:
            raise FarmRuntimeError(f"judge {self.name}: {getattr(exc, 'message', None) or exc}") from None

    async def aclose(self) -> None:
        await self.agent.aclose()


def create_mode_judge(name: str, options: AgentOptions) -> ConnectorModeJudge | AgentModeJudge:
    """The judge ``--judge NAME`` names.

    Raises:
        AgentResolutionError: no such connector or agent (exit 2, before anything runs).
    """
    if name.startswith(AGENT_PREFIX):
        agent_ref = parse_reference(name[len(AGENT_PREFIX):], options)
        return AgentModeJudge(name, create_agent(agent_ref, options))
    return ConnectorModeJudge(name, load_connectors(Path(options.connectors_root)).get(name))
