"""``digest_of``: the sha256 of a JSON value's canonical form, for configuration and call digests.

Apart from ``farm.fleet.replay`` (which keys its recordings by it): every sweep's runtime digests
its fleet plan (``FleetRuntime.hooks_key``), and a sweep without ``--record``/``--replay`` loads
no recorder.
"""

from __future__ import annotations

import hashlib
import json

from farm.models import JsonValue

__all__ = ["digest_of"]


def digest_of(value: JsonValue) -> str:
    """sha256 of a JSON value's canonical form (sorted keys), for config and history digests."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
