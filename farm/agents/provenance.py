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
    model, fingerprint = _text(body.get("model")), _text(body.get("system_fingerprint"))
    request_id = _request_id(headers) if headers is not None else None
    if not (model or fingerprint or request_id):  # the common case: no Served made for nothing
        return None
    return Served(model=model, system_fingerprint=fingerprint, request_id=request_id)


def _request_id(headers: Mapping[str, str]) -> str | None:
    """The first of ``REQUEST_ID_HEADERS`` sent, whatever its case (aiohttp's headers are
    case-insensitive, a dict is not: its names are lowered once, on the first name not found as is)."""
    lowered: dict[str, str] | None = None
    for name in REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value is None:
            if lowered is None:
                lowered = {}
                for key, found in headers.items():
                    lowered.setdefault(key.lower(), found)  # the first of a name wins, as sent
            value = lowered.get(name)
        if request_id := _text(value):
            return request_id
    return None
