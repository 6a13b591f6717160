"""The farm's agent protocol (SPEC 5.2): the request body HTTP and command agents get, and how
their answers become a ``Reply``.

The request: ``{"messages": [...], "sly_data": {...} | null, "context": {...SPEC 5.3...}}``.
The answer: a JSON object with any of ``text``, ``structure``, ``sly_data``, ``tool_calls``,
``usage`` fills those fields; any other JSON value is the structure (a JSON string is text); a
body that is not JSON is the text.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from farm.agents.answers import HttpAnswer
from farm.agents.base import AgentRequest
from farm.agents.secrets import excerpt, redact, redacted
from farm.errors import AgentError, FaultKind
from farm.models import JsonValue, Reply

REPLY_KEYS = frozenset({"text", "structure", "sly_data", "tool_calls", "usage"})
"""Keys of an answer object that fill the Reply; an object with any other key is a structure."""


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
            raise AgentError(redact(f"bad answer: {problems}"), kind=FaultKind.PARSE) from None
    if isinstance(value, str):  # a JSON string is text: a structure is data (SPEC 5.2)
        return Reply(text=value, raw=raw)
    return Reply(structure=value, raw=raw)


def reply_from_answer(answer: HttpAnswer, *, raw: dict[str, Any], what: str) -> Reply:
    """Read an HTTP answer: declared JSON → ``reply_from_value``; other types → text.

    A body without a content type is JSON if it parses, else text (as a program's stdout).
    """
    content_type = answer.content_type
    declared_json = content_type == "application/json" or content_type.endswith("+json")
    if content_type and not declared_json:
        return text_reply(answer.text, raw)
    try:
        value = answer.json()
    except ValueError:
        if declared_json:
            raise AgentError(redact(f"{what}: body declared JSON does not parse: {excerpt(answer.text)}"),
                             kind=FaultKind.PARSE) from None
        return text_reply(answer.text, raw)
    raw["response"]["body"] = redacted(value)
    return reply_from_value(value, raw)


def text_reply(text: str, raw: dict[str, Any]) -> Reply:
    """A body that is not JSON: its text is the answer."""
    raw["response"]["body"] = redact(text)
    return Reply(text=text, raw=raw)
