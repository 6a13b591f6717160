"""Where agents and connectors are looked up, and the overrides from the command line."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_NEURO_SAN_SERVER = "http://localhost:8080"
"""neuro-san's default server address (its HTTP port is 8080)."""


@dataclass(frozen=True)
class AgentOptions:
    """Everything agent resolution needs; built by the CLI, passed down explicitly.

    Plain data (pydantic validates it inside ``farm.plan.sweep_plan.SweepPlan``) because Celery workers rebuild it.
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
    isolate: bool = False
    """``--isolate``: sync python agents run in subprocesses (``farm.agents.isolation``), so one
    that ends its interpreter (``os._exit``, a segfault) is a crashed run, not a dead farm."""

    @classmethod
    def from_env(cls, cwd: Path | None = None, *, isolate: bool = False, **overrides: str | None) -> AgentOptions:
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
        return cls(**values, isolate=isolate)  # type: ignore[arg-type]
