"""Agents behind an HTTP endpoint (SPEC 5.2), and the HTTP clients every adapter here shares.

The farm's protocol: ``POST url`` with ``{"messages", "sly_data", "context"}``; the answer is
read by ``reply_from_value``. A ``package.yao`` of ``type: http`` may reshape both sides:

- ``request``: a JSON template. A string that is exactly ``{{name}}`` becomes that value
  (a list, an object…); ``{{name}}`` inside a longer string is replaced by its text (non-strings
  as JSON). Names: ``messages``, ``last_message`` (text of the last user message),
  ``sly_data``, ``context`` and ``context.<key>`` (``context.user_id``, ``context.chat_id``…).
- ``response``: JSONPath per reply field (``{"text": "$.choices[0].message.content"}``).
- ``headers`` (values may hold ``$ENV.NAME``) and ``timeout`` (seconds, or ``30s``/``1m``/``2m30s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import ssl
import threading
import weakref
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import ValidationError

from farm.agents.base import AgentRequest
from farm.agents.retry import RETRYABLE_STATUSES, TransientError, call_with_retries, parse_retry_after
from farm.agents.secrets import (
    SENSITIVE_HEADERS,
    expand_env,
    redact,
    redact_headers,
    redact_reply,
    redact_value,
    register_secret,
)
from farm.checks.extract import compile_path
from farm.errors import AgentError, AgentResolutionError
from farm.models import JsonValue, Message, Reply

REPLY_KEYS = frozenset({"text", "structure", "sly_data", "tool_calls", "usage"})
"""Keys of an answer object that fill the Reply; an object with any other key is a structure."""
CONNECTIONS_PER_CLIENT = 10
"""One client with a big pool is CPU-bound (ARCHITECTURE.md): open another past this many."""
MAX_CLIENTS = 32
DEFAULT_TIMEOUT_S = 300.0
"""Read timeout when neither the turn nor the manifest gives one (the case default, 5m)."""
CONNECT_TIMEOUT_S = 10.0
TURN_TIMEOUT_SLACK_S = 1.0
"""Added to a turn's ``timeout_s``: the caller's deadline (``execute``) fires first and records a
``timeout``; ours is only the backstop for callers without one."""
EXCERPT = 300
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][\w.]*)\s*\}\}")
DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?")


# ------------------------------------------------------------------------------- client pool


@dataclass
class _Slot:
    client: httpx.AsyncClient
    busy: int = 0


class ClientPool:
    """Small ``httpx.AsyncClient``s, created lazily per event loop, the least busy one used.

    An agent object may serve several event loops (one per worker thread); a client belongs to
    the loop it was made in, so each loop gets its own set.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[_Slot]] = weakref.WeakKeyDictionary()

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[httpx.AsyncClient]:
        """A client of the running loop, held for one request."""
        slot = self._pick(asyncio.get_running_loop())
        try:
            yield slot.client
        finally:
            slot.busy -= 1

    def _pick(self, loop: asyncio.AbstractEventLoop) -> _Slot:
        with self._lock:
            slots = self._loops.setdefault(loop, [])
            slot = min(slots, key=lambda s: s.busy, default=None)
            if slot is None or (slot.busy >= CONNECTIONS_PER_CLIENT and len(slots) < MAX_CLIENTS):
                limits = httpx.Limits(max_connections=CONNECTIONS_PER_CLIENT, max_keepalive_connections=10)
                slot = _Slot(httpx.AsyncClient(limits=limits, follow_redirects=True, trust_env=False,
                                               verify=shared_ssl_context()))
                slots.append(slot)
            slot.busy += 1
            return slot

    def client_count(self) -> int:
        """How many clients the running loop has opened so far."""
        with self._lock:
            return len(self._loops.get(asyncio.get_running_loop(), []))

    async def aclose(self) -> None:
        """Close the running loop's clients (each loop that used the pool should call this).

        Clients of loops already closed are forgotten; those of loops still running are left to them.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            mine = self._loops.pop(loop, [])
            for closed in [other for other in self._loops if other.is_closed()]:
                del self._loops[closed]
        for slot in mine:
            await slot.client.aclose()


_ssl_lock = threading.Lock()
_ssl_context: ssl.SSLContext | None = None


def shared_ssl_context() -> ssl.SSLContext:
    """One verifying SSL context for every client: building one loads the CA bundle (~26 ms).

    The same as each client's default (certifi's bundle; ``trust_env=False`` ignores SSL_CERT_*).
    An ``SSLContext`` may be shared by clients of several threads and loops.
    """
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            _ssl_context = httpx.create_ssl_context(trust_env=False)
        return _ssl_context


async def post_json(
    pool: ClientPool, url: str, body: Any, *, headers: Mapping[str, str], timeout_s: float | None, what: str
) -> httpx.Response:
    """POST once; map transport faults and 429/5xx statuses to ``TransientError``/``AgentError``."""
    timeout = httpx.Timeout(timeout_s or DEFAULT_TIMEOUT_S, connect=CONNECT_TIMEOUT_S, pool=None)
    try:
        async with pool.client() as client:
            response = await client.post(url, json=body, headers=dict(headers), timeout=timeout)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise TransientError(redact(f"{what}: {type(exc).__name__}: {str(exc) or 'connection lost'}")) from None
    except httpx.TimeoutException as exc:
        raise AgentError(
            redact(f"{what}: no answer within {timeout_s or DEFAULT_TIMEOUT_S:g}s ({type(exc).__name__})")
        ) from None
    except httpx.HTTPError as exc:
        raise AgentError(redact(f"{what}: {type(exc).__name__}: {exc}")) from None
    if response.status_code >= 400:
        message = redact(f"{what}: HTTP {response.status_code}: {excerpt(response.text)}")
        if response.status_code in RETRYABLE_STATUSES:
            raise TransientError(message, retry_after=parse_retry_after(response.headers.get("Retry-After")))
        raise AgentError(message)
    return response


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """A short, redacted, one-line view of a body for error messages."""
    flat = " ".join(redact(text).split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


# -------------------------------------------------------------------------- the farm protocol


def request_payload(request: AgentRequest) -> dict[str, Any]:
    """The body the farm's protocol sends (HTTP and command agents)."""
    return {
        "messages": request.messages,
        "sly_data": request.sly_data,
        "context": request.context.model_dump(mode="json"),
    }


def reply_from_value(value: JsonValue, raw: JsonValue = None) -> Reply:
    """An answer's JSON value as a Reply: an object of reply keys fills them, else a structure."""
    if isinstance(value, dict) and value and set(value) <= REPLY_KEYS:
        try:
            return Reply.model_validate({**value, "raw": raw})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise AgentError(redact(f"bad answer: {problems}")) from None
    if isinstance(value, str):  # a JSON string is text: a structure is data (SPEC 5.2)
        return Reply(text=value, raw=raw)
    return Reply(structure=value, raw=raw)


def reply_from_body(response: httpx.Response, *, raw: dict[str, Any], what: str) -> Reply:
    """Read an HTTP answer: declared JSON → ``reply_from_value``; other types → text.

    A body without a content type is JSON if it parses, else text (as a program's stdout).
    """
    content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    declared_json = content_type == "application/json" or content_type.endswith("+json")
    if content_type and not declared_json:
        return text_reply(response.text, raw)
    try:
        value = json.loads(response.content)
    except ValueError:
        if declared_json:
            raise AgentError(redact(f"{what}: body declared JSON does not parse: {excerpt(response.text)}")) from None
        return text_reply(response.text, raw)
    raw["response"]["body"] = redacted(value)
    return reply_from_value(value, raw)


def redacted(value: Any) -> Any:
    """``redact_value(value)``, but ``value`` itself (no copy) when no secret occurs in it.

    One ``redact`` over all its strings joined by NUL finds what ``redact_value`` would mask
    string by string (a match across a NUL only sends us to ``redact_value``): one lock and
    one pass instead of one per string of a request body.
    """
    strings: list[str] = []
    _collect_strings(value, strings)
    joined = "\0".join(strings)
    return value if redact(joined) == joined else redact_value(value)


def _collect_strings(value: Any, into: list[str]) -> None:
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            into.append(str(key))
            _collect_strings(item, into)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect_strings(item, into)


def text_reply(text: str, raw: dict[str, Any]) -> Reply:
    raw["response"]["body"] = redact(text)
    return Reply(text=text, raw=raw)


# ------------------------------------------------------------------------ manifest templates


def parse_duration(value: Any, *, where: str) -> float:
    """Seconds from a number or ``30s``/``1m``/``2m30s``/``500ms``."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    match = DURATION.fullmatch(value.strip()) if isinstance(value, str) and value.strip() else None
    if not match or not any(match.groups()):
        raise AgentResolutionError(f"{where}: expected a duration (30, '30s', '1m', '2m30s'), got {value!r}")
    h, m, s, ms = (float(g) if g else 0.0 for g in match.groups())
    return h * 3600 + m * 60 + s + ms / 1000


def check_template(template: Any, *, where: str) -> None:
    """Refuse a template naming unknown variables."""
    if isinstance(template, dict):
        for key, value in template.items():
            check_template(value, where=f"{where}.{key}")
    elif isinstance(template, list):
        for i, value in enumerate(template):
            check_template(value, where=f"{where}[{i}]")
    elif isinstance(template, str):
        for name in PLACEHOLDER.findall(template):
            head, _, rest = name.partition(".")
            if head not in ("messages", "last_message", "sly_data", "context") or (rest and head != "context"):
                raise AgentResolutionError(
                    f"{where}: unknown variable {{{{{name}}}}} (use messages, last_message, sly_data, "
                    "context, context.<key>)"
                )


def render_template(template: Any, variables: dict[str, Any]) -> Any:
    """Fill a checked template (see the module docstring)."""
    if isinstance(template, dict):
        return {key: render_template(value, variables) for key, value in template.items()}
    if isinstance(template, list):
        return [render_template(value, variables) for value in template]
    if not isinstance(template, str):
        return template
    whole = PLACEHOLDER.fullmatch(template.strip())
    if whole:
        return lookup(variables, whole.group(1))

    def text(match: re.Match[str]) -> str:
        value = lookup(variables, match.group(1))
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    return PLACEHOLDER.sub(text, template)


def lookup(variables: dict[str, Any], name: str) -> Any:
    head, _, rest = name.partition(".")
    value = variables.get(head)
    return value.get(rest) if rest and isinstance(value, dict) else value


def template_variables(request: AgentRequest) -> dict[str, Any]:
    users = [m for m in request.messages if m.get("role", "user") == "user"]
    last = Message.model_validate(users[-1]).text() if users else ""
    payload = request_payload(request)
    return {**payload, "last_message": last}


def compile_response_paths(paths: Any, *, where: str) -> dict[str, Any]:
    """``{reply field: JSONPath}`` compiled; unknown fields and bad paths are refused."""
    if not isinstance(paths, dict):
        raise AgentResolutionError(f"{where}: expected an object of JSONPaths, got {type(paths).__name__}")
    compiled: dict[str, Any] = {}
    for field, path in paths.items():
        if field not in REPLY_KEYS:
            raise AgentResolutionError(f"{where}.{field}: unknown reply field (one of {sorted(REPLY_KEYS)})")
        try:
            compiled[field] = compile_path(path)  # the suites' grammar: filters work in manifests too
        except ValueError as exc:
            raise AgentResolutionError(f"{where}.{field}: {exc}") from None
    return compiled


def apply_response_paths(value: JsonValue, paths: dict[str, Any], raw: JsonValue) -> Reply:
    """Pick each reply field out of an answer with its JSONPath (missing: None)."""
    fields: dict[str, Any] = {}
    for field, path in paths.items():
        found = [m.value for m in path.find(value)]
        picked = found[0] if len(found) == 1 else (found or None)
        if field == "text" and picked is not None and not isinstance(picked, str):
            picked = json.dumps(picked, ensure_ascii=False)
        fields[field] = picked
    return reply_from_value(fields, raw) if any(v is not None for v in fields.values()) else Reply(raw=raw)


# ---------------------------------------------------------------------------------- the agent


class HttpAgent:
    """An agent answering ``POST url`` (the farm protocol, or a manifest's template)."""

    def __init__(
        self,
        agent_id: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        template: Any = None,
        response_paths: dict[str, Any] | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self.id = agent_id
        self.url = url
        self.headers = headers or {}
        self.template = template
        self.response_paths = response_paths
        self.timeout_s = timeout_s
        self.pool = ClientPool()

    async def respond(self, request: AgentRequest) -> Reply:
        if self.template is None:
            body = request_payload(request)
        else:
            body = render_template(self.template, template_variables(request))
        timeout = turn_timeout(request.timeout_s, self.timeout_s)
        return await call_with_retries(lambda: self._exchange(body, timeout), conversation=request.conversation)

    async def _exchange(self, body: Any, timeout_s: float | None) -> Reply:
        what = f"agent {self.id}"
        response = await post_json(self.pool, self.url, body, headers=self.headers, timeout_s=timeout_s, what=what)
        raw: dict[str, Any] = {
            "request": {"url": redact(self.url), "headers": redact_headers(self.headers), "body": redacted(body)},
            "response": {"status": response.status_code, "body": None},
        }
        if self.response_paths is None:
            return redact_reply(reply_from_body(response, raw=raw, what=what))
        try:
            value = response.json()
        except ValueError:
            return redact_reply(text_reply(response.text, raw))
        raw["response"]["body"] = redacted(value)
        return redact_reply(apply_response_paths(value, self.response_paths, raw))

    async def aclose(self) -> None:
        await self.pool.aclose()


def turn_timeout(turn_s: float | None, own_s: float | None) -> float | None:
    """The HTTP read timeout of one turn: the agent's own limit, or the turn's plus slack."""
    limits = [t for t in (turn_s + TURN_TIMEOUT_SLACK_S if turn_s else None, own_s) if t]
    return min(limits) if limits else None


def create_http_agent(
    url: str, *, manifest: dict[str, Any] | None = None, agent_id: str | None = None, source: str | None = None
) -> HttpAgent:
    """An agent for ``http(s)://…`` references and ``type: http`` manifests.

    ``source`` names the manifest file in error messages.

    Raises:
        AgentResolutionError: a manifest option is wrong or names an unset environment variable.
    """
    manifest = manifest or {}
    where = source or (f"package.yao of agent {agent_id}" if agent_id else url)
    if not url or not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise AgentResolutionError(f"{where}: url: expected an http(s) URL, got {url!r}")
    headers = manifest_headers(manifest.get("headers"), where=f"{where}: headers")
    template = manifest.get("request")
    if template is not None:
        check_template(template, where=f"{where}: request")
    paths = manifest.get("response")
    compiled = compile_response_paths(paths, where=f"{where}: response") if paths is not None else None
    timeout = manifest.get("timeout")
    timeout_s = parse_duration(timeout, where=f"{where}: timeout") if timeout is not None else None
    return HttpAgent(
        agent_id or url, url, headers=headers, template=template, response_paths=compiled, timeout_s=timeout_s
    )


def manifest_headers(headers: Any, *, where: str) -> dict[str, str]:
    """Header values with ``$ENV.NAME`` expanded; sensitive ones registered as secrets."""
    if headers is None:
        return {}
    if not isinstance(headers, dict):
        raise AgentResolutionError(f"{where}: expected an object, got {type(headers).__name__}")
    expanded: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise AgentResolutionError(f"{where}.{name}: expected a string, got {json.dumps(value)}")
        expanded[name] = expand_env(str(value), where=f"{where}.{name}")
        if name.lower() in SENSITIVE_HEADERS:
            register_secret(expanded[name])
            register_secret(expanded[name].partition(" ")[2])  # the token of "Bearer <token>"
    return expanded
