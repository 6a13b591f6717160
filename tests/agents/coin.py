"""An agent of known pass probability (adaptive-runs tests): each run's outcome is a seeded coin.

The case's ``metadata.p`` is the chance a run answers ``yes`` (the expected answer); the coin of
(case, run) is a hash, so the same run index gives the same outcome in every sweep: a full sweep
and an adaptive one see the same outcomes for the runs both make.
"""

from __future__ import annotations

import hashlib
from typing import Any


def coin(case_id: str, run: int) -> float:
    """A uniform number in [0, 1) fixed by (case, run)."""
    digest = hashlib.sha256(f"{case_id}#{run}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def respond(messages: list[dict[str, Any]], context: Any) -> str:
    p = float((context.metadata or {}).get("p", 1.0))
    return "yes" if coin(context.case_id, context.run) < p else "no"
