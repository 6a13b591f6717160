"""Answers that say a provider's quota is used up, not "slow down" (SPEC 13).

A plain 429 is a rate limit: the limiter pauses and slows down (``farm.fleet.ratestate``). Some
answers say that waiting will not help: OpenAI's ``insufficient_quota`` (a 429 too, with
``"You exceeded your current quota"``) and its billing codes, Anthropic's "credit balance is too
low". The transport asks ``quota_error`` about every error answer and raises what it returns,
so the sweep stops at once with ``metadata.stopped = "quota"`` (exit 5) instead of retrying.
"""

from __future__ import annotations

import json
from typing import Any

from farm.agents.secrets import redact
from farm.errors import QuotaExhaustedError

QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})
QUOTA_PHRASES = ("credit balance is too low", "exceeded your current quota")


def _error_object(body: str) -> dict[str, Any]:
    try:
        answer = json.loads(body)
    except ValueError:
        return {}
    error = answer.get("error") if isinstance(answer, dict) else None
    return error if isinstance(error, dict) else {}


def quota_error(key: str, status: int, body: str | bytes | None) -> QuotaExhaustedError | None:
    """The error to raise when an answer of ``key`` says its quota is exhausted, else None."""
    if status < 400 or not body:
        return None
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    error = _error_object(text)
    codes = {str(error.get("code")), str(error.get("type"))}
    message = str(error.get("message") or text)
    if codes & QUOTA_CODES or any(phrase in message.lower() for phrase in QUOTA_PHRASES):
        said = redact(message.strip()[:200])
        return QuotaExhaustedError(f"rate-limit key {key!r}: the provider's quota is exhausted (HTTP {status}: "
                                   f"{said}); stopping instead of retrying")
    return None
