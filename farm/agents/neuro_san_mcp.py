"""Agents on a neuro-san server over MCP (``connections: mcp``), with the MCP Python SDK.

neuro-san serves each agent network its manifest marks ``mcp`` (the default) as a tool of its
MCP endpoint (``{server}/mcp``, streamable HTTP; 0.7 lists ``a/b`` as ``a__b``). A turn is one
``tools/call`` of the agent's tool; its arguments are the ChatRequest the HTTP API takes
(``user_message``, ``sly_data``, ``chat_context``, ``chat_filter``:
``farm.agents.neuro_san.request_body``). The result holds the final text (``content[0].text``,
HTML-escaped by the server, the structure appended as a fenced JSON block) and
``structuredContent`` ``{structure?, chat_context?}``: text, structure and the chat context come
back as over HTTP. What MCP does not carry (neuro-san 0.6.98 and 0.7.15): the sly_data the agent
returns, tool calls and token usage. A case that checks returned sly_data is skipped over MCP
when it is loaded (``farm.suites.hocon``).

The tool's input schema is read on the first call: a tool whose schema has no ``chat_context``
cannot carry a conversation, and a continued turn over it fails saying so, never runs as an
unrelated single turn. Each turn opens its own MCP session; a timeout cancels the call, which
closes its HTTP stream (neuro-san's MCP handler, which answers in one write at the end, notices
only then).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import re
from collections.abc import AsyncIterator
from typing import Any

from farm.agents.base import AgentRequest
from farm.agents.neuro_san import CHAT_CONTEXT_STATE, request_body, request_headers
from farm.agents.neuro_san_stream import STRING_ERROR, error_in_answer
from farm.agents.neuro_san_version import ServerVersion
from farm.agents.secrets import excerpt
from farm.errors import AgentError, AgentResolutionError, FaultKind
from farm.extras import install_hint
from farm.models import Reply, Served

__all__ = ["MCP_PATH", "NeuroSanMcpAgent", "create_neuro_san_mcp_agent"]

MCP_PATH = "/mcp"
CONNECT_TIMEOUT_S = 30.0
RETRYING = "Retrying: "
"""How neuro-san's messages about a failed LLM call begin (before it gives up with an error)."""
INSTALL_HINT = f"connections: mcp needs the MCP Python SDK: {install_hint('mcp')}"
_STRUCTURE_BLOCK = re.compile(r"```json\n.*\n```\Z", re.DOTALL)
"""The structure the server appends to the text (for clients that read only the text)."""


def _sdk() -> Any:
    try:
        import mcp
        from mcp.client import streamable_http
    except ImportError:
        raise AgentResolutionError(INSTALL_HINT) from None
    return mcp.ClientSession, streamable_http


@contextlib.asynccontextmanager
async def _streams(sdk: Any, url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport (``streamable_http_client``, taking an httpx client, where
    the SDK has it; the older ``streamablehttp_client`` else). No read timeout: the run's deadline governs."""
    if not hasattr(sdk, "streamable_http_client"):
        async with sdk.streamablehttp_client(url, headers=headers, sse_read_timeout=None) as streams:
            yield streams
        return
    import httpx

    timeout = httpx.Timeout(CONNECT_TIMEOUT_S, read=None)
    async with httpx.AsyncClient(headers=headers, timeout=timeout, follow_redirects=True) as client, \
            sdk.streamable_http_client(url, http_client=client) as streams:
        yield streams


class NeuroSanMcpAgent:
    """An agent on a neuro-san server, called as the server's MCP tool of the same name."""

    def __init__(self, server: str, agent: str, agent_id: str) -> None:
        self.id = agent_id
        self.server = server
        self.agent = agent
        self.url = server + MCP_PATH
        self.where = f"neuro-san agent {agent!r} over MCP on {server}"
        self.tool = agent
        """The tool's name as the server lists it."""
        self.carries_context: bool | None = None
        """Whether the tool's input schema takes a ``chat_context`` (None: not read yet)."""
        self._session, self._sdk = _sdk()
        self.version = ServerVersion(server)

    async def respond(self, request: AgentRequest) -> Reply:
        body = request_body(request, self.where)
        headers = request_headers(request.context, self.where)
        try:
            async with asyncio.timeout(request.timeout_s):
                result = await self._call(body, headers)
        except TimeoutError:
            limit = f" within {request.timeout_s:g}s" if request.timeout_s is not None else ""
            raise TimeoutError(f"{self.where}: no answer{limit}; MCP stream closed") from None
        structured = result.structuredContent or {}
        state = request.conversation.state
        if structured.get("chat_context"):
            state[CHAT_CONTEXT_STATE] = structured["chat_context"]
        else:  # as over HTTP: no chat_context back means the next turn starts afresh
            state.pop(CHAT_CONTEXT_STATE, None)
        structure = structured.get("structure")
        text = _text_of(result)
        if structure is not None:
            text = _STRUCTURE_BLOCK.sub("", text)
        error = error_in_answer(_final_part(text), structure)
        if error is not None:  # as over HTTP: neuro-san answers an agent's failure as its text
            raise AgentError(f"{self.where}: the agent answered with an error: {excerpt(error)}",
                             kind=FaultKind.CRASHED)
        sent = {key: value for key, value in body.items() if key != "chat_context"}
        version = await self.version.get()  # SPEC 25: what served it, as over HTTP
        return Reply(text=text, structure=structure, raw={"url": self.url, "tool": self.agent, "request": sent,
                                                            "result": result.model_dump(mode="json")},
                     served=None if version is None else Served(server_version=version))

    async def _call(self, body: dict[str, Any], headers: dict[str, str]) -> Any:
        try:
            async with _streams(self._sdk, self.url, headers) as (read, write, _), \
                    self._session(read, write) as session:
                await session.initialize()
                if self.carries_context is None:
                    self.carries_context = await self._read_schema(session)
                if "chat_context" in body and not self.carries_context:
                    raise AgentError(f"{self.where}: the tool's input schema has no chat_context, so it cannot "
                                     "carry the conversation: a multi-turn case cannot run over MCP",
                                     kind=FaultKind.CONFIG)
                result = await session.call_tool(self.tool, body)
        except (AgentError, AgentResolutionError, asyncio.CancelledError):
            raise
        except Exception as exc:  # the SDK's task group wraps what failed: the first fault is what failed
            fault = _first_fault(exc)
            if isinstance(fault, AgentError):
                raise fault from None
            raise AgentError(f"{self.where}: {type(fault).__name__}: {fault}", kind=FaultKind.CONNECT) from None
        if result.isError:
            raise AgentError(f"{self.where}: the tool failed: {_text_of(result)}", kind=FaultKind.CRASHED)
        return result

    async def _read_schema(self, session: Any) -> bool:
        tools = (await session.list_tools()).tools
        names = (self.agent, self.agent.replace("/", "__"))  # 0.7 lists deep/echo as deep__echo
        tool = next((t for t in tools if t.name in names), None)
        if tool is None:
            served = ", ".join(t.name for t in tools[:20]) or "none"
            raise AgentError(f"unknown MCP tool {self.agent!r} on server {self.server} (it serves: {served})",
                             kind=FaultKind.CONFIG)
        self.tool = tool.name
        return "chat_context" in _properties(tool.inputSchema or {})

    async def aclose(self) -> None:
        """Nothing held between turns: each turn's MCP session is closed when it ends."""


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema's top-level properties, through local ``$ref``s (neuro-san's root is
    ``{"$ref": "#/components/schemas/ChatRequest", "components": …}``)."""
    node: Any = schema
    for _ in range(8):  # a ref chain longer than this is not a schema the farm understands
        ref = node.get("$ref") if isinstance(node, dict) else None
        if not isinstance(ref, str) or not ref.startswith("#/"):
            break
        node = schema
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
    properties = node.get("properties") if isinstance(node, dict) else None
    return properties if isinstance(properties, dict) else {}


def _final_part(text: str) -> str:
    """The text of the answer's last message. The MCP tool joins the text of every framework
    message: an agent that failed answers ``Retrying: …`` lines, then ``Error from <agent>: …``."""
    if not text.startswith(RETRYING):
        return text
    found = STRING_ERROR.search(text)
    return text[found.start():] if found else text


def _text_of(result: Any) -> str:
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    return html.unescape("".join(texts))  # the server escapes with html.escape: unescape is its exact inverse


def _first_fault(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def create_neuro_san_mcp_agent(server: str, agent: str, *, agent_id: str | None = None) -> NeuroSanMcpAgent:
    from farm.agents.urls import neuro_san_server

    server = neuro_san_server(server)
    return NeuroSanMcpAgent(server, agent, agent_id or f"{server}/{agent} (mcp)")
