"""What served an answer (SPEC 25), read from the answer itself: an OpenAI-compatible body's
``model`` and ``system_fingerprint``, and the provider's request id header."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from farm.models import Served

REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-amzn-requestid")
"""Where providers put their request id (OpenAI, Anthropic, AWS), first found wins."""

MAX_FIELD_CHARS = 200
"""A served field longer than this is cut: the farm records names, not whatever a server sends."""


def _text(value: Any) -> str | None:
    if not isinstance(value, str | int) or isinstance(value, bool) or value == "":
        return None
    return str(value)[:MAX_FIELD_CHARS]


def served_of(answer: Any, headers: Mapping[str, str] | None) -> Served | None:
    """The served model, fingerprint and request id of one answer; None when it reports none."""
    body = answer if isinstance(answer, dict) else {}
    request_id = None
    for name in REQUEST_ID_HEADERS:
        if headers is not None and (request_id := _text(_header(headers, name))):
            break
    served = Served(model=_text(body.get("model")), system_fingerprint=_text(body.get("system_fingerprint")),
                    request_id=request_id)
    return served if served.model or served.system_fingerprint or served.request_id else None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by name, whatever its case (aiohttp's headers are case-insensitive, a dict is not)."""
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value
