"""Finding the agent under test (SPEC 5.1) and building its adapter.

Resolution happens once per suite, before anything runs, and yields an ``AgentRef``: plain
data that a Celery worker can turn back into the same adapter with ``create_agent``.

Order: ``-n`` if given; else walk up from the suite file to the first directory holding
``package.yao``; else, for a neuro-san case, its ``agent`` key in the agents root and then on
the neuro-san server. References: an agent id (``keyword``, ``workers.system.keyword``: folders
under the agents root), ``py:module:function`` / ``py:file.py:function``, ``http(s)://…``,
``neuro-san://host:port/agent`` (port 8080 when none: ``farm.agents.urls``), ``cmd:program``.
Adapters are built by the registry (``farm.agents.registry``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from farm.agents.base import Agent
from farm.agents.hooks import NO_HOOKS, AgentHooks
from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.agents.registry import AdapterSpec, create_adapter
from farm.agents.urls import SCHEME as NEURO_SAN_SCHEME
from farm.agents.urls import neuro_san_server, parse_neuro_san_url, split_url
from farm.errors import AgentResolutionError
from farm.models import Case
from farm.yaofile import read_yao_object

MANIFEST = "package.yao"
def parse_reference(ref: str, options: AgentOptions, *, base_dir: str | None = None) -> AgentRef:
    """Turn a ``-n`` value (or a manifest-less reference) into an AgentRef."""
    base = base_dir or options.cwd
    if ref.startswith("py:"):
        if ":" not in ref[3:]:
            raise AgentResolutionError(f"agent {ref!r}: expected py:module:function or py:path/file.py:function")
        return AgentRef("python", ref[3:], base)
    if ref.startswith(("http://", "https://")):
        if not split_url(ref, f"agent {ref!r}").hostname:
            raise AgentResolutionError(f"agent {ref!r}: the URL has no host")
        return AgentRef("http", ref, base)
    if ref.startswith(NEURO_SAN_SCHEME):
        server, name = parse_neuro_san_url(ref)
        return AgentRef("neuro-san", server, base, name)
    if ref.startswith("cmd:"):
        return AgentRef("command", ref[4:], base)
    return AgentRef("manifest", str(_find_by_id(ref, options)), base)


def names_neuro_san_server(name: str, options: AgentOptions) -> bool | None:
    """Whether ``-n name`` is an agent on a neuro-san server (``neuro-san://``, or a manifest of
    type ``neuro-san``); None when it does not resolve (its error is reported where it is used)."""
    try:
        ref = parse_reference(name, options)
        if ref.kind == "manifest":
            return bool(read_manifest(Path(ref.target)).get("type") == "neuro-san")
    except AgentResolutionError:
        return None
    return ref.kind == "neuro-san"


def _find_by_id(agent_id: str, options: AgentOptions) -> Path:
    root = Path(options.agents_root)
    candidates = [root / agent_id, root.joinpath(*agent_id.split("."))]
    for candidate in candidates:
        if (candidate / MANIFEST).is_file():
            return candidate.resolve()
    tried = ", ".join(str(c / MANIFEST) for c in dict.fromkeys(candidates))
    raise AgentResolutionError(
        f"agent {agent_id!r} not found (looked for {tried}; set FARM_AGENTS_ROOT or use py:, http://, "
        "neuro-san://, cmd:)"
    )


def find_manifest_upwards(start: Path) -> Path | None:
    """The first directory from ``start`` upwards that holds ``package.yao`` (the Yao rule)."""
    current = start.resolve()
    for directory in (current, *current.parents):
        if (directory / MANIFEST).is_file():
            return directory
    return None


def resolve_case_agent(case: Case, name: str | None, options: AgentOptions) -> AgentRef:
    """The agent a case runs against; raises AgentResolutionError naming what was tried.

    A neuro-san case with an ``http``/``https`` connection always talks to the server: that is
    what the connection is there to test. With ``-n`` naming a neuro-san agent, an ``mcp`` case
    calls that agent as its server's MCP tool.
    """
    if name:
        ref = parse_reference(name, options)
        if ref.kind == "neuro-san" and case.format == "neuro-san" and case.connection == "mcp":
            return dataclasses.replace(ref, connection="mcp")
        return ref
    if case.format == "neuro-san" and case.connection in ("http", "https", "mcp"):
        return _on_server(case, options)
    start = Path(case.base_dir) if case.base_dir else Path(options.cwd)
    found = find_manifest_upwards(start)
    if found is not None:
        return AgentRef("manifest", str(found), str(found))
    if case.format == "neuro-san" and case.agent:
        try:
            return parse_reference(case.agent, options, base_dir=case.base_dir)
        except AgentResolutionError as exc:
            if case.connection == "direct":
                raise AgentResolutionError(f"{case.source}: agent: {exc.message}") from None
        return _on_server(case, options)
    where = case.source or options.cwd
    raise AgentResolutionError(
        f"{where}: no agent: no {MANIFEST} in {start} or above; pass -n AGENT "
        "(an agent id, py:module:function, http://…, neuro-san://host:port/agent or cmd:program)"
    )


def _on_server(case: Case, options: AgentOptions) -> AgentRef:
    if not case.agent:
        raise AgentResolutionError(f"{case.source}: agent: missing (needed for a {case.connection} connection)")
    server = neuro_san_server(options.neuro_san_server)
    if case.connection == "https" and server.startswith("http://"):
        server = "https://" + server[len("http://"):]
    return AgentRef("neuro-san", server, case.base_dir, case.agent, "mcp" if case.connection == "mcp" else "")


def read_manifest(agent_dir: Path) -> dict[str, Any]:
    return read_yao_object(agent_dir / MANIFEST, "manifest", AgentResolutionError)


_TARGET_FIELD = {"python": "entry", "http": "url", "command": "command", "neuro-san": "server"}
"""The manifest field a reference's target stands for, by reference kind."""


@contextlib.contextmanager
def _naming_arm(ref: AgentRef) -> Iterator[None]:
    """A matrix arm's agent that does not resolve or build is named by its arm."""
    try:
        yield
    except AgentResolutionError as exc:
        if not ref.arm:
            raise
        raise AgentResolutionError(f"arm {ref.arm!r}: {exc.message}") from None


def adapter_spec(ref: AgentRef, options: AgentOptions) -> AdapterSpec:
    """What the registry builds ``ref`` from: its manifest, or the manifest a reference stands for."""
    with _naming_arm(ref):
        return _adapter_spec(ref, options)


def _adapter_spec(ref: AgentRef, options: AgentOptions) -> AdapterSpec:
    if ref.kind == "manifest":
        agent_dir = Path(ref.target)
        manifest = read_manifest(agent_dir)
        if ref.settings:  # a matrix arm's options win over the manifest's (SPEC 22)
            own = manifest.get("options")
            manifest = {**manifest, "options": {**(own if isinstance(own, dict) else {}), **json.loads(ref.settings)}}
        return AdapterSpec(manifest, agent_dir, agent_dir.name, str(agent_dir / MANIFEST))
    manifest = {"type": ref.kind, _TARGET_FIELD[ref.kind]: ref.target}
    if ref.kind == "neuro-san":
        manifest["agent"] = ref.name
        if ref.connection:
            manifest["connection"] = ref.connection
    return AdapterSpec(manifest, Path(ref.base_dir or options.cwd), None, ref.label)


def create_agent(ref: AgentRef, options: AgentOptions, hooks: AgentHooks = NO_HOOKS, *,
                 spec: AdapterSpec | None = None) -> Agent:
    """Build the adapter for a resolved reference (from ``spec``, its ``adapter_spec``, when that
    is read already): ``hooks.limiter`` admits its HTTP attempts, ``hooks.wrap_agent`` (when set)
    wraps it."""
    if ref.connector:  # a matrix arm's connector wins over -c (SPEC 22)
        options = dataclasses.replace(options, connector=ref.connector)
    with hooks.building():
        spec = spec if spec is not None else adapter_spec(ref, options)
        with _naming_arm(ref):
            agent = create_adapter(spec, options, hooks)
    return hooks.wrap_agent(agent, ref) if hooks.wrap_agent is not None else agent


class AgentPool:
    """Adapters built once per reference and shared by all runs (connection reuse).

    Each is built by ``create_agent`` with this process's ``hooks`` (a limiter for its HTTP
    attempts, a wrapper around each agent).
    """

    def __init__(self, options: AgentOptions, hooks: AgentHooks = NO_HOOKS,
                 built: Mapping[AgentRef, Agent] | None = None) -> None:
        self._options = options
        self._hooks = hooks
        self._agents: dict[AgentRef, Agent] = dict(built or {})
        """``built``: adapters built already, with these hooks (``farm.agents.built``)."""

    def get(self, ref: AgentRef) -> Agent:
        agent = self._agents.get(ref)
        if agent is None:
            agent = self._agents[ref] = create_agent(ref, self._options, self._hooks)
        return agent

    async def aclose(self) -> None:
        for agent in self._agents.values():
            await agent.aclose()
        self._agents.clear()
