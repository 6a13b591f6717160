"""neuro-san's server version (SPEC 25), for ``Served.server_version``: the genuine server (0.7.15)
answers ``GET /healthz`` (and ``/``, ``/readyz``) with ``{"service", "status", "versions":
{"neuro-san": "0.7.15", …}}`` (its ``ServerStatus.get_versions``; ``AGENT_VERSION_LIBS`` adds
libraries). Asked once per agent in a process, on a client of its own outside the agent's
limiter (a health check is no paid call); a server that does not say (an older one, a proxy that
hides it, an error) leaves the version unknown, and it is not asked again."""

from __future__ import annotations

from farm.agents.provenance import MAX_FIELD_CHARS
from farm.agents.retry import TransientError
from farm.agents.transport import Transport
from farm.errors import AgentError

VERSION_TIMEOUT_S = 5.0
"""How long the health check may take (only the first run of an agent waits for it)."""


class ServerVersion:
    """The neuro-san version of one server, asked once (concurrent first runs may each ask)."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.value: str | None = None
        self.asked = False

    async def get(self) -> str | None:
        if not self.asked:
            self.value = await self._ask()
            self.asked = True
        return self.value

    async def _ask(self) -> str | None:
        own = Transport()
        what = f"neuro-san server {self.server}: health check"
        try:
            async with own.attempt(self.server) as attempt:
                answer = await attempt.get(f"{self.server}/healthz", timeout_s=VERSION_TIMEOUT_S, what=what)
            versions = answer.json().get("versions") if answer.status == 200 else None
        except (AgentError, TransientError, TimeoutError, OSError, ValueError, AttributeError):
            return None
        finally:
            await own.aclose()
        version = versions.get("neuro-san") if isinstance(versions, dict) else None
        return str(version)[:MAX_FIELD_CHARS] if isinstance(version, str | int | float) and version != "" else None


__all__ = ["VERSION_TIMEOUT_S", "ServerVersion"]
