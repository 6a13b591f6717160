"""The adapter registry: agent type → factory, one table for references and manifests alike.

A ``package.yao`` names its adapter with ``type`` (default ``prompt``); a reference (``py:``,
``http://``, ``neuro-san://``, ``cmd:``) is read as the manifest it stands for, so both reach
the adapters through ``ADAPTERS``. An unknown type is refused with the known ones listed (the
shape of inspect_ai's ``log/_recorders/create.py``). Factories import their adapter module on
first use: a sweep of Python agents never loads the HTTP client.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.agents.base import Agent
from farm.agents.hooks import AgentHooks
from farm.agents.options import AgentOptions
from farm.agents.secrets import register_url_password
from farm.errors import AgentResolutionError

DEFAULT_TYPE = "prompt"


@dataclass(frozen=True)
class AdapterSpec:
    """What a factory builds from: the manifest (or what a reference stands for) and where it lives."""

    manifest: dict[str, Any]
    base_dir: Path
    """Relative paths (entry files, programs, prompts.yml) are read from here."""
    agent_id: str | None
    """The manifest's agent id; None for a reference (each adapter names it from its target)."""
    where: str
    """Names the manifest (or reference) in error messages."""

    @property
    def type(self) -> Any:
        return self.manifest.get("type", DEFAULT_TYPE)

    def required(self, key: str) -> str:
        """A non-empty string field of the manifest, or an error naming it."""
        value = self.manifest.get(key)
        if not isinstance(value, str) or not value:
            raise AgentResolutionError(f"{self.where}: {key}: missing (a non-empty string is required)")
        return value


AdapterFactory = Callable[[AdapterSpec, AgentOptions, AgentHooks], Agent]


def _prompt(spec: AdapterSpec, options: AgentOptions, hooks: AgentHooks) -> Agent:
    from farm.agents.prompt import create_prompt_agent

    return create_prompt_agent(spec.base_dir, spec.manifest, options, limiter=hooks.limiter)


def _python(spec: AdapterSpec, options: AgentOptions, hooks: AgentHooks) -> Agent:
    from farm.agents.python import create_python_agent

    return create_python_agent(spec.required("entry"), base_dir=spec.base_dir, agent_id=spec.agent_id,
                               isolate=options.isolate)


def _http(spec: AdapterSpec, options: AgentOptions, hooks: AgentHooks) -> Agent:
    from farm.agents.http import create_http_agent

    source = spec.where if spec.agent_id else None
    register_url_password(spec.manifest.get("url"))
    return create_http_agent(spec.required("url"), manifest=spec.manifest, agent_id=spec.agent_id, source=source,
                             limiter=hooks.limiter)


def _neuro_san(spec: AdapterSpec, options: AgentOptions, hooks: AgentHooks) -> Agent:
    from farm.agents.neuro_san import create_neuro_san_agent

    server = spec.manifest.get("server") or options.neuro_san_server
    register_url_password(server)
    if spec.manifest.get("connection") == "mcp":
        from farm.agents.neuro_san_mcp import create_neuro_san_mcp_agent

        return create_neuro_san_mcp_agent(server, spec.required("agent"), agent_id=spec.agent_id)
    return create_neuro_san_agent(server, spec.required("agent"), agent_id=spec.agent_id, limiter=hooks.limiter)


def _command(spec: AdapterSpec, options: AgentOptions, hooks: AgentHooks) -> Agent:
    from farm.agents.command import create_command_agent

    return create_command_agent(spec.required("command"), base_dir=spec.base_dir, agent_id=spec.agent_id)


ADAPTERS: dict[str, AdapterFactory] = {
    "prompt": _prompt,
    "python": _python,
    "http": _http,
    "neuro-san": _neuro_san,
    "command": _command,
}
"""Every agent type a manifest may name, and the factory that builds its adapter."""


def create_adapter(spec: AdapterSpec, options: AgentOptions, hooks: AgentHooks) -> Agent:
    """The adapter ``spec.type`` names, its HTTP attempts admitted by ``hooks.limiter``.

    Raises:
        AgentResolutionError: an unknown type (the known ones are listed), or the factory's own.
    """
    factory = ADAPTERS.get(spec.type) if isinstance(spec.type, str) else None
    if factory is None:
        raise AgentResolutionError(
            f"{spec.where}: type: unknown agent type {spec.type!r} (expected one of: {', '.join(ADAPTERS)})"
        )
    return factory(spec, options, hooks)
