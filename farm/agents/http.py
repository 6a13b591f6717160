"""Agents behind an HTTP endpoint (SPEC 5.2): ``http(s)://…`` references and ``type: http`` manifests.

The farm's protocol (``farm.agents.protocol``): ``POST url`` with ``{"messages", "sly_data",
"context"}``. A manifest may reshape both sides (``request`` template, ``response`` paths:
``farm.agents.templates``) and adds ``headers`` (values may hold ``$ENV.NAME``) and ``timeout``
(a duration: ``30``, ``30s``, ``.5s``, ``2m30s``; ``farm.durations``). Every attempt goes
through ``farm.agents.transport`` under the agent's id as its rate-limit key.
"""

from __future__ import annotations

import json
from typing import Any

from farm.agents.answers import HttpAnswer
from farm.agents.base import AgentRequest
from farm.agents.limiter import CallLimiter
from farm.agents.protocol import reply_from_answer, request_payload, text_reply
from farm.agents.provenance import served_of
from farm.agents.retry import call_with_retries
from farm.agents.secrets import (
    SENSITIVE_HEADERS,
    expand_env,
    redact,
    redact_headers,
    redact_reply,
    redacted,
    register_secret,
)
from farm.agents.templates import (
    apply_response_paths,
    check_template,
    compile_response_paths,
    render_template,
    template_variables,
)
from farm.agents.transport import Transport, read_timeout
from farm.durations import parse_duration
from farm.errors import AgentResolutionError
from farm.models import Reply


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
        limiter: CallLimiter | None = None,
    ) -> None:
        self.id = agent_id
        self.url = url
        self.headers = headers or {}
        self.template = template
        self.response_paths = response_paths
        self.timeout_s = timeout_s
        self.transport = Transport(limiter)
        self._what = f"agent {agent_id}"

    async def respond(self, request: AgentRequest) -> Reply:
        if self.template is None:
            body = request_payload(request)
        else:
            body = render_template(self.template, template_variables(request))
        timeout = read_timeout(request.timeout_s, self.timeout_s)
        return await call_with_retries(lambda: self._exchange(body, timeout), conversation=request.conversation)

    async def _exchange(self, body: Any, timeout_s: float | None) -> Reply:
        async with self.transport.attempt(self.id) as attempt:
            answer = await attempt.post_json(self.url, body, headers=self.headers, timeout_s=timeout_s, what=self._what)
            reply = self._read(answer, body)
            if reply.served is None:  # the request id, where sent (most answers send none: nothing assigned)
                served = served_of(None, answer.headers)
                if served is not None:
                    reply.served = served
            attempt.record_usage(reply.usage)
        return reply

    def _read(self, answer: HttpAnswer, body: Any) -> Reply:
        raw: dict[str, Any] = {
            "request": {"url": redact(self.url), "headers": redact_headers(self.headers), "body": redacted(body)},
            "response": {"status": answer.status, "body": None},
        }
        if self.response_paths is None:
            return redact_reply(reply_from_answer(answer, raw=raw, what=self._what))
        try:
            value = answer.json()
        except ValueError:
            return redact_reply(text_reply(answer.text, raw))
        raw["response"]["body"] = redacted(value)
        return redact_reply(apply_response_paths(value, self.response_paths, raw))

    async def aclose(self) -> None:
        await self.transport.aclose()


def create_http_agent(
    url: str,
    *,
    manifest: dict[str, Any] | None = None,
    agent_id: str | None = None,
    source: str | None = None,
    limiter: CallLimiter | None = None,
) -> HttpAgent:
    """An agent for ``http(s)://…`` references and ``type: http`` manifests.

    ``source`` names the manifest file in error messages; ``limiter`` admits its HTTP attempts.

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
    return HttpAgent(
        agent_id or url, url, headers=headers, template=template, response_paths=compiled,
        timeout_s=manifest_timeout(manifest.get("timeout"), where=f"{where}: timeout"), limiter=limiter,
    )


def manifest_timeout(value: Any, *, where: str) -> float | None:
    """The manifest's ``timeout`` in seconds, in the suites' duration grammar (None when absent)."""
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise AgentResolutionError(f"{where}: {exc}") from None


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
