"""A ``type: http`` manifest's reshaping of the farm protocol: request templates and response paths.

- ``request``: a JSON template. A string that is exactly ``{{name}}`` becomes that value (a list,
  an object…); ``{{name}}`` inside a longer string is replaced by its text (non-strings as JSON).
  Names: ``messages``, ``last_message`` (text of the last user message), ``sly_data``,
  ``context`` and ``context.<key>`` (``context.user_id``, ``context.chat_id``…).
- ``response``: JSONPath per reply field (``{"text": "$.choices[0].message.content"}``), in the
  suites' grammar (``farm.checks.extract.compile_path``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from farm.agents.base import AgentRequest
from farm.agents.protocol import REPLY_KEYS, reply_from_value, request_payload
from farm.checks.extract import compile_path
from farm.errors import AgentResolutionError
from farm.models import JsonValue, Message, Reply

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][\w.]*)\s*\}\}")


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
        return _lookup(variables, whole.group(1))

    def text(match: re.Match[str]) -> str:
        value = _lookup(variables, match.group(1))
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    return PLACEHOLDER.sub(text, template)


def _lookup(variables: dict[str, Any], name: str) -> Any:
    head, _, rest = name.partition(".")
    value = variables.get(head)
    return value.get(rest) if rest and isinstance(value, dict) else value


def template_variables(request: AgentRequest) -> dict[str, Any]:
    """What a template may name: the protocol's body plus ``last_message``."""
    users = [m for m in request.messages if m.get("role", "user") == "user"]
    last = Message.model_validate(users[-1]).text() if users else ""
    return {**request_payload(request), "last_message": last}


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
