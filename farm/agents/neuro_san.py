"""Agents on a neuro-san server, over its streaming chat HTTP API (SPEC 5, Appendix A).

One turn is ``POST {server}/api/v1/{agent}/streaming_chat`` with the turn's user text,
``sly_data``, the conversation's ``chat_context`` and the ``chat_filter``; the case's metadata
and the test environment travel as request headers. The answer streams back as JSON lines, read
incrementally by ``farm.agents.neuro_san_stream.StreamReader``; the ``chat_context`` it returns
is kept in ``Conversation.state`` and sent back verbatim next turn. The stream has no deadline:
the turn's ``timeout_s`` bounds the whole exchange and the connection is closed when it passes
(``TimeoutError``), so the server sees the client go. Every attempt goes through
``farm.agents.transport`` under the agent's id as its rate-limit key.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any
from urllib.parse import quote, urlsplit

from farm.agents.base import AgentContext, AgentRequest
from farm.agents.limiter import CallLimiter
from farm.agents.neuro_san_stream import StreamReader
from farm.agents.neuro_san_version import ServerVersion
from farm.agents.retry import TransientError, call_with_retries
from farm.agents.secrets import excerpt
from farm.agents.transport import Transport
from farm.agents.urls import neuro_san_server
from farm.errors import AgentError, AgentResolutionError, FaultKind
from farm.models import JsonValue, Reply, Served

CHAT_FILTERS = frozenset({"MINIMAL", "MAXIMAL"})
CHAT_CONTEXT_STATE = "neuro_san.chat_context"
"""Key of the chat_context in ``Conversation.state``."""
CONTEXT_HEADERS = ("user_id", "team_id", "locale", "client_type", "client_ip", "case_id", "run", "chat_id")
"""Test-environment fields sent as headers (``accept``/``referer`` would clash with HTTP's own)."""
HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
LIST_TIMEOUT_S = 10.0


# ---------------------------------------------------------------------------- the request


def user_text(request: AgentRequest) -> str:
    """The text of this turn's last user message (neuro-san keeps the history itself)."""
    for messages in (request.new_messages, request.messages):
        for message in reversed(messages):
            if message.get("role", "user") == "user":
                return content_text(message.get("content"))
    return ""


def content_text(content: JsonValue) -> str:
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type", "text") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return "" if content is None else str(content)


def request_body(request: AgentRequest, where: str) -> dict[str, Any]:
    """The ChatRequest: empty fields left out, the conversation's chat_context sent back as is."""
    body: dict[str, Any] = {"user_message": {"type": "HUMAN", "text": user_text(request)}}
    if request.sly_data:
        body["sly_data"] = request.sly_data
    chat_context = request.conversation.state.get(CHAT_CONTEXT_STATE)
    if chat_context:
        body["chat_context"] = chat_context
    if request.chat_filter:
        chat_filter = request.chat_filter.strip().upper()
        if chat_filter not in CHAT_FILTERS:
            raise AgentError(f"{where}: chat_filter {request.chat_filter!r} is not MINIMAL or MAXIMAL",
                             kind=FaultKind.CONFIG)
        body["chat_filter"] = {"chat_filter_type": chat_filter}
    return body


def request_headers(context: AgentContext, where: str) -> dict[str, str]:
    """The test environment and the case's metadata (which wins) as request headers."""
    values: dict[str, Any] = {key: getattr(context, key) for key in CONTEXT_HEADERS}
    values.update(context.metadata or {})
    headers: dict[str, str] = {}
    for key, value in values.items():
        if value is None or value == "":
            continue
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        if not HEADER_NAME.fullmatch(str(key)):
            raise AgentError(f"{where}: metadata.{key}: the name cannot be an HTTP header", kind=FaultKind.CONFIG)
        if "\n" in text or "\r" in text or not text.isascii():
            raise AgentError(f"{where}: metadata.{key}: value cannot travel as an HTTP header: {text!r}",
                             kind=FaultKind.CONFIG)
        headers[str(key)] = text
    return headers


# ------------------------------------------------------------------------------- the agent


class NeuroSanAgent:
    """An agent on a neuro-san server; one instance serves many conversations (and event loops)."""

    def __init__(self, server: str, agent: str, agent_id: str, *, limiter: CallLimiter | None = None) -> None:
        self.id = agent_id
        self.server = server
        self.agent = agent
        self.url = f"{server}/api/v1/{quote(agent, safe='/')}/streaming_chat"
        self.where = f"neuro-san agent {agent!r} on {server}"
        self.transport = Transport(limiter)
        self.version = ServerVersion(server)

    async def respond(self, request: AgentRequest) -> Reply:
        body = request_body(request, self.where)
        headers = request_headers(request.context, self.where)
        try:
            # The deadline covers retries too; leaving the block closes the stream's connection.
            async with asyncio.timeout(request.timeout_s):
                reader = await call_with_retries(
                    lambda: self._exchange(body, headers), conversation=request.conversation
                )
        except TimeoutError:
            limit = f" within {request.timeout_s:g}s" if request.timeout_s is not None else ""
            raise TimeoutError(f"{self.where}: no final answer{limit}; connection closed") from None
        state = request.conversation.state
        if reader.chat_context:
            state[CHAT_CONTEXT_STATE] = reader.chat_context
        else:  # neuro-san's rule: no chat_context back means the next turn starts afresh
            state.pop(CHAT_CONTEXT_STATE, None)
        reply = self._reply(body, reader)
        if (version := await self.version.get()) is not None:  # SPEC 25: what served it
            reply.served = Served(server_version=version)
        return reply

    async def aclose(self) -> None:
        await self.transport.aclose()

    async def _exchange(self, body: dict[str, Any], headers: dict[str, str]) -> StreamReader:
        """One attempt: POST, check the status, read every line as it comes, check the answer."""
        reader = StreamReader(self.where)
        async with (
            self.transport.attempt(self.id) as attempt,
            attempt.open_stream(self.url, body, headers=headers, what=self.where) as stream,
        ):
            if stream.status != 404:
                await stream.raise_for_status()
                async for line in stream.lines():
                    reader.feed_line(line)
                attempt.record_usage(reader.usage)
        if stream.status == 404:  # asked once the lease is released: a capped limiter must not deadlock
            raise AgentError(f"unknown agent {self.agent!r} on server {self.server}{await self._served()}",
                             kind=FaultKind.CONFIG)
        reader.check()
        return reader

    async def _served(self) -> str:
        """For the unknown-agent message: what the server does serve, when it says."""
        try:
            names = await list_agents(self.server, transport=self.transport, key=self.id)
        except AgentError:
            return ""
        shown = ", ".join(names[:20]) + (", …" if len(names) > 20 else "")
        return f" (it serves: {shown})" if names else " (it serves no agents)"

    def _reply(self, body: dict[str, Any], reader: StreamReader) -> Reply:
        sent = {key: value for key, value in body.items() if key != "chat_context"}
        if "chat_context" in body:
            sent["chat_context"] = "<sent back from the previous turn>"
        raw: dict[str, Any] = {"url": self.url, "request": sent, "messages": reader.messages}
        if reader.dropped:
            raw["messages_dropped"] = reader.dropped
        return Reply(
            text=reader.text,
            structure=reader.structure,
            sly_data=reader.sly_data,
            tool_calls=reader.tool_calls,
            usage=reader.usage,
            raw=raw,
        )


async def list_agents(server: str, *, transport: Transport | None = None, key: str | None = None) -> list[str]:
    """The agent names a neuro-san server lists (``GET /api/v1/list``).

    ``transport`` (with its limiter, under ``key``) makes the call; a one-off one when None.
    """
    server = neuro_san_server(server)
    own = transport or Transport()
    what = f"neuro-san server {server}: cannot list agents"
    try:
        async with own.attempt(key or server) as attempt:
            answer = await attempt.get(f"{server}/api/v1/list", timeout_s=LIST_TIMEOUT_S, what=what)
    except (AgentError, TransientError) as exc:  # not retried: the listing is only a hint
        raise AgentError(str(exc)) from None
    finally:
        if transport is None:
            await own.aclose()
    if answer.status != 200:
        raise AgentError(f"neuro-san server {server}: listing agents: HTTP {answer.status}")
    try:
        agents = answer.json()["agents"]
        return [str(a["agent_name"]) for a in agents if isinstance(a, dict) and "agent_name" in a]
    except (ValueError, KeyError, TypeError):
        raise AgentError(f"neuro-san server {server}: unexpected agent list: {excerpt(answer.text)}") from None


def create_neuro_san_agent(
    server: str, agent: str, *, agent_id: str | None = None, limiter: CallLimiter | None = None
) -> NeuroSanAgent:
    """The agent ``agent`` (may hold ``/``) on the neuro-san server at ``server`` (``farm.agents.urls``)."""
    server = neuro_san_server(server)
    name = agent.strip().strip("/")
    if not name:
        raise AgentResolutionError(f"neuro-san server {server}: no agent name given")
    return NeuroSanAgent(server, name, agent_id or f"neuro-san://{urlsplit(server).netloc}/{name}", limiter=limiter)
