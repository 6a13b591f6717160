"""LLM endpoints used by prompt agents and judges (Yao's ``connectors/``).

``connectors/openai/gpt-4o.conn.yao`` is the connector ``openai.gpt-4o``: JSON with comments,
``{"type": "openai", "label": …, "options": {"model", "host", "key", "max_tokens"}}`` (the
options may also sit at the top level). A value ``$ENV.NAME`` is read from the environment when
the connector is first used; keys are registered as secrets and never leave this module unmasked.
Type ``openai`` means any server with an OpenAI-compatible ``/v1/chat/completions``;
``max_tokens``, when set, is sent with every completion. Every attempt goes through
``farm.agents.transport`` under the connector's id as its rate-limit key, with a token estimate.
"""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from farm.agents.base import Conversation
from farm.agents.limiter import CallLimiter
from farm.agents.provenance import served_of
from farm.agents.retry import call_with_retries
from farm.agents.secrets import excerpt, expand_env, redact, redact_reply, redact_value, register_secret
from farm.agents.transport import Transport
from farm.errors import AgentError, AgentResolutionError, FaultKind
from farm.models import Reply, ToolCall
from farm.yaofile import read_yao_object

SUFFIX = ".conn.yao"
DEFAULT_HOST = "https://api.openai.com"
SUPPORTED_TYPES = ("openai",)
OPTION_KEYS = ("model", "host", "key")
"""String options (``$ENV.NAME`` allowed); ``max_tokens`` is a positive integer."""
CHARS_PER_TOKEN = 4
"""A rough, tokenizer-free estimate of input tokens for the limiter (English text averages ~4)."""


@dataclass
class Connector:
    """One chat-completions endpoint. ``key`` is a secret: never print it."""

    id: str
    model: str
    host: str = DEFAULT_HOST
    key: str | None = field(default=None, repr=False)
    type: str = "openai"
    label: str | None = None
    source: str = ""
    max_tokens: int | None = None
    """Sent as ``max_tokens`` with every completion when set."""
    rate_limit: object = None
    """The file's ``rate_limit`` as written: fleet control parses it (``farm.fleet.keys``)."""
    transport: Transport = field(default_factory=Transport, repr=False, compare=False)

    @property
    def endpoint(self) -> str:
        """``{host}/v1/chat/completions``, without doubling a ``/v1`` the host already has."""
        host = self.host.rstrip("/")
        if host.endswith("/chat/completions"):
            return host
        return f"{host}/chat/completions" if host.endswith("/v1") else f"{host}/v1/chat/completions"

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float | None = None,
        timeout_s: float | None = None,
        conversation: Conversation | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Reply:
        """One chat completion as a Reply (text, tool calls, usage), retrying transient faults.

        Raises:
            AgentError: the server refused, failed or answered something unreadable.
        """
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if temperature is not None:
            body["temperature"] = temperature
        if tools:
            body["tools"] = tools
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        tokens = estimate_tokens(messages) + (self.max_tokens or 0)
        return await call_with_retries(lambda: self._complete(body, timeout_s, tokens), conversation=conversation)

    async def _complete(self, body: dict[str, Any], timeout_s: float | None, tokens: int) -> Reply:
        what = f"connector {self.id}"
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        async with self.transport.attempt(self.id, tokens=tokens) as attempt:
            response = await attempt.post_json(self.endpoint, body, headers=headers, timeout_s=timeout_s, what=what)
            try:
                answer = response.json()
            except ValueError:
                raise AgentError(redact(f"{what}: answer is not JSON: {excerpt(response.text)}"),
                                 kind=FaultKind.PARSE) from None
            if isinstance(answer, dict) and isinstance(answer.get("usage"), dict):
                attempt.record_usage(answer["usage"])
        raw = {"request": {"url": redact(self.endpoint), "body": redact_value(body)}, "response": redact_value(answer)}
        reply = completion_reply(answer, raw, what=what)
        reply.served = served_of(answer, response.headers)  # what served it, not what was asked (SPEC 25)
        return redact_reply(reply)

    async def aclose(self) -> None:
        await self.transport.aclose()


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """A rough count of the input tokens of ``messages`` (characters / 4, at least 1 per message)."""
    chars = sum(len(m["content"]) if isinstance(m.get("content"), str) else len(json.dumps(m.get("content")))
                for m in messages)
    return chars // CHARS_PER_TOKEN + len(messages)


def completion_reply(answer: Any, raw: Any, *, what: str) -> Reply:
    """Reply from a chat-completions answer: choices[0].message's content and tool calls."""
    try:
        message = answer["choices"][0]["message"]
        content = message.get("content")
        calls = message.get("tool_calls") or []
        tool_calls = [tool_call(call["function"]) for call in calls]
    except (KeyError, IndexError, TypeError, AttributeError):
        raise AgentError(
            redact(f"{what}: no choices[0].message in the answer: {excerpt(json.dumps(answer))}"), kind=FaultKind.PARSE
        ) from None
    if content is not None and not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else None
    return Reply(text=content, tool_calls=tool_calls, usage=usage, raw=raw)


def tool_call(function: dict[str, Any]) -> ToolCall:
    """An OpenAI function call; its JSON-string arguments parsed when they parse."""
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    return ToolCall(name=str(function["name"]), arguments=arguments)


# ----------------------------------------------------------------------------------- loading


def connector_id(path: Path, root: Path) -> str:
    """``openai/gpt-4o.conn.yao`` under the root → ``openai.gpt-4o``."""
    relative = path.relative_to(root).as_posix()
    return relative[: -len(SUFFIX)].replace("/", ".")


def read_connector(path: Path, connector_id: str, *, limiter: CallLimiter | None = None) -> Connector:
    """Parse one ``.conn.yao`` file; ``limiter`` admits the connector's HTTP attempts.

    Raises:
        AgentResolutionError: the file does not parse, or a field is missing or wrong.
    """
    data = read_yao_object(path, "connector file", AgentResolutionError)
    kind = data.get("type", "openai")
    if kind not in SUPPORTED_TYPES:
        raise AgentResolutionError(f"{path}: type: {kind!r} is not supported (supported: {', '.join(SUPPORTED_TYPES)})")
    options = data.get("options", {})
    if not isinstance(options, dict):
        raise AgentResolutionError(f"{path}: options: expected an object, got {type(options).__name__}")
    values: dict[str, str] = {}
    for key in OPTION_KEYS:
        where, value = (f"options.{key}", options[key]) if key in options else (key, data.get(key))
        if value is None:
            continue
        if not isinstance(value, str):
            raise AgentResolutionError(f"{path}: {where}: expected a string, got {json.dumps(value)}")
        values[key] = expand_env(value, where=f"{path}: {where}")
    if not values.get("model"):
        raise AgentResolutionError(f"{path}: options.model: missing (the model to ask for)")
    register_secret(values.get("key"))
    label = data.get("label") if isinstance(data.get("label"), str) else None
    return Connector(
        id=connector_id,
        model=values["model"],
        host=values.get("host") or DEFAULT_HOST,
        key=values.get("key") or None,
        type=kind,
        label=label,
        source=str(path),
        max_tokens=_max_tokens(options.get("max_tokens", data.get("max_tokens")), path),
        rate_limit=data.get("rate_limit"),
        transport=Transport(limiter),
    )


def _max_tokens(value: Any, path: Path) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise AgentResolutionError(f"{path}: options.max_tokens: expected a positive integer, got {json.dumps(value)}")
    return value


class ConnectorRegistry:
    """The connectors under a root, each read on first use (an unused broken file harms no one)."""

    def __init__(self, root: Path, files: dict[str, Path], limiter: CallLimiter | None = None) -> None:
        self.root = root
        self.files = files
        self.limiter = limiter
        self._loaded: dict[str, Connector] = {}
        self._lock = threading.Lock()

    def ids(self) -> list[str]:
        return sorted(self.files)

    def get(self, connector_id: str) -> Connector:
        """The connector with this id.

        Raises:
            AgentResolutionError: no such connector (the known ids are listed), or its file is wrong.
        """
        with self._lock:
            if connector_id in self._loaded:
                return self._loaded[connector_id]
        path = self.files.get(connector_id)
        if path is None:
            known = ", ".join(self.ids()) or f"none: no *{SUFFIX} files under {self.root}"
            raise AgentResolutionError(f"unknown connector {connector_id!r} (known: {known})")
        connector = read_connector(path, connector_id, limiter=self.limiter)
        with self._lock:
            return self._loaded.setdefault(connector_id, connector)

    async def aclose(self) -> None:
        for connector in list(self._loaded.values()):
            await connector.aclose()


def load_connectors(root: Path, *, limiter: CallLimiter | None = None) -> ConnectorRegistry:
    """Index ``root/**/*.conn.yao`` (a missing root is an empty registry)."""
    root = Path(root)
    files = {connector_id(p, root): p for p in sorted(root.rglob(f"*{SUFFIX}"))} if root.is_dir() else {}
    return ConnectorRegistry(root, files, limiter)
