"""Answers that say a provider's quota is used up, not "slow down" (SPEC 13).

A plain 429 is a rate limit: the limiter pauses and slows down (``farm.fleet.ratestate``). Some
answers say that waiting will not help: OpenAI's ``insufficient_quota`` (a 429 too, with
``"You exceeded your current quota"``) and its billing codes, Anthropic's "credit balance is too
low". The transport calls ``raise_if_quota_exhausted`` on every error answer, so the sweep
stops at once with ``metadata.stopped = "quota"`` (exit 5) instead of retrying; the refusal is
told to the limiter seam (``farm.agents.limiter.refused``), which notes it in the run's fleet
scope however the error is caught on its way up. Reading an answer is the agents' business (the
fault mapping, ``farm.agents.faults``, asks it too); fleet control only listens.
"""

from __future__ import annotations

import json
from typing import Any

from farm.agents.limiter import refused
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


def quota_message(status: int, body: str | bytes | None) -> str | None:
    """What an error answer says when it says the provider's quota is exhausted, else None."""
    if status < 400 or not body:
        return None
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    error = _error_object(text)
    codes = {str(error.get("code")), str(error.get("type"))}
    message = str(error.get("message") or text)
    if codes & QUOTA_CODES or any(phrase in message.lower() for phrase in QUOTA_PHRASES):
        return message
    return None


def quota_error(key: str, status: int, body: str | bytes | None) -> QuotaExhaustedError | None:
    """The error to raise when an answer of ``key`` says its quota is exhausted, else None."""
    message = quota_message(status, body)
    if message is None:
        return None
    said = redact(message.strip()[:200])
    return QuotaExhaustedError(f"rate-limit key {key!r}: the provider's quota is exhausted (HTTP {status}: "
                               f"{said}); stopping instead of retrying")


def raise_if_quota_exhausted(key: str, status: int, body: str | bytes | None) -> None:
    """Raise ``QuotaExhaustedError`` (noted in the run's scope) when the answer says so.

    Raises:
        QuotaExhaustedError: the answer says the key's quota is used up.
    """
    error = quota_error(key, status, body)
    if error is not None:
        raise refused(error, answered=True)
