"""Where agents and connectors are looked up, the overrides from the command line (``AgentOptions``,
plain data), and what a process adds to the adapters it builds (``AgentHooks``, objects)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from farm.agents.base import Agent
    from farm.agents.resolve import AgentRef
    from farm.agents.transport import CallLimiter

DEFAULT_NEURO_SAN_SERVER = "http://localhost:8080"
"""neuro-san's default server address (its HTTP port is 8080)."""


@dataclass(frozen=True)
class AgentOptions:
    """Everything agent resolution needs; built by the CLI, passed down explicitly.

    Plain data (JSON-able via ``to_dict``) because Celery workers rebuild it.
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
        return dict(self.__dict__)


AgentWrapper = Callable[["Agent", "AgentRef"], "Agent"]
"""Wraps an agent built for a reference at ``Agent.respond`` level (record/replay, accounting)."""


@dataclass(frozen=True)
class AgentHooks:
    """What this process adds to every adapter it builds; never serialised (objects, not data).

    Set where the agent pool and the judges are made (the local executor, a worker thread) and
    passed to ``AgentPool``, ``create_agent`` and ``create_judge_resolver``.
    """

    limiter: CallLimiter | None = None
    """Admits every HTTP attempt of every adapter, connector and judge (``farm.agents.transport``);
    None: every attempt at once."""
    wrap_agent: AgentWrapper | None = None
    """Applied to every agent ``create_agent`` builds: the agent under test, ``agents:`` judges,
    reporter agents."""


NO_HOOKS = AgentHooks()
