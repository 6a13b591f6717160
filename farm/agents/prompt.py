"""Yao-style prompt agents run without the Yao runtime (``package.yao`` ``type: prompt``).

The agent is its system messages (``prompts.yml``: a YAML list of ``{role, content}``) plus a
connector. Each turn sends prompts + the conversation to the connector and returns its Reply
as it is: the text stays text (Yao assertions parse JSON out of it themselves). A Yao case's
``options.connector`` picks another connector for that case; ``-c`` wins over it (Yao's order).
The manifest's ``tools`` (OpenAI function tools, or bare ``{name, description, parameters}``) are
offered on every call; the connector's tool calls come back in the Reply (a run's trajectory).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from farm.agents.base import AgentRequest
from farm.agents.connectors import Connector, ConnectorRegistry, load_connectors
from farm.agents.limiter import CallLimiter
from farm.agents.options import AgentOptions
from farm.agents.transport import read_timeout
from farm.errors import AgentResolutionError
from farm.models import Reply

PROMPTS_FILE = "prompts.yml"


def load_prompts(path: Path) -> list[dict[str, Any]]:
    """The messages of a ``prompts.yml`` (none when the file is absent).

    Raises:
        AgentResolutionError: bad YAML (with its line), or an entry that is not ``{role, content}``.
    """
    if not path.is_file():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise AgentResolutionError(f"{path}:{line}: {exc.problem or exc}") from None
    except (OSError, yaml.YAMLError) as exc:
        raise AgentResolutionError(f"{path}: {exc}") from None
    if data is None:
        return []
    if not isinstance(data, list):
        raise AgentResolutionError(f"{path}: expected a list of {{role, content}}, got {type(data).__name__}")
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise AgentResolutionError(f"{path}: [{i}]: expected {{role, content}}, got {type(entry).__name__}")
        if not isinstance(entry.get("role"), str) or not entry["role"]:
            raise AgentResolutionError(f"{path}: [{i}].role: missing (system, user or assistant)")
        if not isinstance(entry.get("content"), str | list):
            raise AgentResolutionError(f"{path}: [{i}].content: expected text")
    return [dict(entry) for entry in data]


class PromptAgent:
    """Prompts + conversation → one chat completion."""

    def __init__(
        self, agent_id: str, connector: Connector, prompts: list[dict[str, Any]], temperature: float | None = None,
        registry: ConnectorRegistry | None = None, tools: list[dict[str, Any]] | None = None,
    ) -> None:
        self.id = agent_id
        self.connector = connector
        self.prompts = prompts
        self.temperature = temperature
        self.registry = registry
        """Where a case's ``options.connector`` is looked up (None: the option is not honoured)."""
        self.tools = tools
        """Offered to the model on every call (``package.yao`` ``tools``)."""

    def _connector_for(self, request: AgentRequest) -> Connector:
        chosen = (request.context.options or {}).get("connector")
        if request.context.connector or not isinstance(chosen, str) or self.registry is None:
            return self.connector
        return self.registry.get(chosen)

    async def respond(self, request: AgentRequest) -> Reply:
        return await self._connector_for(request).chat(
            [*self.prompts, *request.messages],
            temperature=self.temperature,
            timeout_s=read_timeout(request.timeout_s, None),
            conversation=request.conversation,
            tools=self.tools,
        )

    async def aclose(self) -> None:
        if self.registry is not None:  # it holds self.connector too
            await self.registry.aclose()
        else:
            await self.connector.aclose()


def create_prompt_agent(
    agent_dir: Path, manifest: dict[str, Any], options: AgentOptions, *, limiter: CallLimiter | None = None
) -> PromptAgent:
    """A prompt agent for the manifest in ``agent_dir``; ``options.connector`` (``-c``) wins;
    ``limiter`` admits its connector's HTTP attempts.

    Raises:
        AgentResolutionError: no connector, an unknown one, or a bad ``prompts.yml``.
    """
    agent_dir = Path(agent_dir)
    name = options.connector or manifest.get("connector")
    if not isinstance(name, str) or not name:
        raise AgentResolutionError(
            f"{agent_dir / 'package.yao'}: connector: missing (set it in package.yao or pass -c CONNECTOR)"
        )
    registry = load_connectors(Path(options.connectors_root), limiter=limiter)
    connector = registry.get(name)
    model = settings.get("model") if isinstance(settings := manifest.get("options"), dict) else None
    if model is not None:  # options.model (a matrix arm's): the same endpoint, another model
        if not isinstance(model, str) or not model:
            raise AgentResolutionError(f"{agent_dir / 'package.yao'}: options.model: expected a model name")
        connector = dataclasses.replace(connector, model=model)
    prompts = load_prompts(agent_dir / PROMPTS_FILE)
    temperature = settings.get("temperature") if isinstance(settings, dict) else None
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, int | float)):
        raise AgentResolutionError(f"{agent_dir / 'package.yao'}: options.temperature: expected a number")
    declared = manifest.get("id")
    agent_id = declared if isinstance(declared, str) and declared else agent_dir.name
    tools = manifest_tools(manifest.get("tools"), f"{agent_dir / 'package.yao'}: tools")
    return PromptAgent(agent_id, connector, prompts, temperature, registry, tools)


def manifest_tools(value: Any, where: str) -> list[dict[str, Any]] | None:
    """``package.yao`` ``tools`` as OpenAI function tools: a list (or Yao's ``{tools: [...]}``) of
    ``{type: function, function: {...}}`` or bare ``{name, description, parameters}``.

    Raises:
        AgentResolutionError: not a list of objects, or a tool without a name.
    """
    if isinstance(value, dict) and "tools" in value:
        value = value["tools"]
    if value is None:
        return None
    if not isinstance(value, list):
        raise AgentResolutionError(f"{where}: expected a list of tools, got {type(value).__name__}")
    tools = []
    for i, tool in enumerate(value):
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise AgentResolutionError(f"{where}[{i}]: expected {{name, description, parameters}} with a name")
        tools.append({"type": "function", "function": function})
    return tools or None
