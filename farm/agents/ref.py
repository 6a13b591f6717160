"""``AgentRef``: a resolved agent reference, plain data a worker turns back into the same adapter."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from farm.settings import safe_url

__all__ = ["AgentKind", "AgentRef"]

AgentKind = Literal["manifest", "python", "http", "neuro-san", "command"]


@dataclass(frozen=True)
class AgentRef:
    """A resolved agent reference; ``target`` is a directory, a callable spec, a URL or a command."""

    kind: AgentKind
    target: str
    base_dir: str = ""
    name: str = ""
    """neuro-san: the agent name on the server."""
    connection: str = ""
    """neuro-san: ``mcp`` to call the agent as the server's MCP tool; '' for its HTTP API."""
    arm: str = ""
    """The matrix arm this reference is (SPEC 22): its errors name it; '' outside a matrix."""
    connector: str = ""
    """A matrix arm's connector (SPEC 22): a prompt agent's, winning over ``-c`` and its manifest's."""
    settings: str = ""
    """A matrix arm's options as canonical JSON (``{"model": …, "temperature": …}``): a prompt
    agent's ``model`` and ``temperature``; '' for none. Part of the reference, so two arms that
    differ only in them are two agents (adapters, rate-limit keys, replay keys)."""

    @property
    def arm_key(self) -> str:
        """What an arm adds to the reference ('' for none): part of every key made of it."""
        return f"{self.connector}|{self.settings}" if self.connector or self.settings else ""

    @property
    def label(self) -> str:
        """How reports name the agent."""
        if self.kind == "manifest":
            return Path(self.target).name
        if self.kind == "neuro-san":  # a URL's password is never in a report, a span or the history
            return f"{safe_url(self.target)}/{self.name}" + (f" ({self.connection})" if self.connection else "")
        if self.kind == "http":
            return safe_url(self.target)
        prefix = {"python": "py:", "command": "cmd:"}.get(self.kind, "")
        return prefix + self.target
