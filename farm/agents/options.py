"""Where agents and connectors are looked up, and the overrides from the command line."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from farm.agents.base import Agent
    from farm.agents.resolve import AgentRef
    from farm.agents.transport import CallLimiter

AgentWrapper = Callable[["Agent", "AgentRef"], "Agent"]
"""Wraps every agent built for a reference (record/replay, usage accounting): returns an Agent."""

DEFAULT_NEURO_SAN_SERVER = "http://localhost:8080"
"""neuro-san's default server address (its HTTP port is 8080)."""


@dataclass(frozen=True)
class AgentOptions:
    """Everything agent resolution needs; built by the CLI, passed down explicitly.

    Plain data (JSON-able via ``to_dict``) because Celery workers rebuild it; the two runtime
    hooks at the end (a limiter, an agent wrapper) are objects of this process: left out of
    ``to_dict``, equality and hashing, and set again where the options are rebuilt.
    """

    cwd: str
    """Working directory the sweep was started from."""
    agents_root: str
    """``FARM_AGENTS_ROOT``, else ``<cwd>/assistants``."""
    connectors_root: str
    """``FARM_CONNECTORS_ROOT``, else ``<cwd>/connectors`` (Yao layout)."""
    connector: str | None = None
    """``-c``: overrides the connector of prompt agents."""
    judge: str | None = None
    """``--judge`` (else ``FARM_JUDGE``): connector used by gist/not_gist/agent checks without ``use``."""
    neuro_san_server: str = DEFAULT_NEURO_SAN_SERVER
    """``--server`` / ``FARM_NEURO_SAN_URL``: server for neuro-san ``http``/``https`` connections."""
    limiter: CallLimiter | None = field(default=None, compare=False, repr=False)
    """Admits every HTTP attempt of every adapter and judge (``farm.agents.transport``); None: no limits."""
    wrap_agent: AgentWrapper | None = field(default=None, compare=False, repr=False)
    """Applied to every agent ``create_agent`` builds (the agent under test, ``agents:`` judges, reporters)."""

    @classmethod
    def from_env(cls, cwd: Path | None = None, **overrides: str | None) -> AgentOptions:
        """Defaults from the environment, then explicit overrides (None means 'not given')."""
        base = Path(cwd or Path.cwd()).resolve()
        values: dict[str, str | None] = {
            "cwd": str(base),
            "agents_root": os.environ.get("FARM_AGENTS_ROOT") or str(base / "assistants"),
            "connectors_root": os.environ.get("FARM_CONNECTORS_ROOT") or str(base / "connectors"),
            "neuro_san_server": os.environ.get("FARM_NEURO_SAN_URL") or DEFAULT_NEURO_SAN_SERVER,
            "judge": os.environ.get("FARM_JUDGE") or None,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, str | None]:
        """The plain fields (the runtime hooks stay in this process)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.compare}
