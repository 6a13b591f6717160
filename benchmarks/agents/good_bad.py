"""A python agent that does nothing but answer "good" or "bad" (by run): two distinct answers in
every case, the same across cases (issue 45's semantic-share sweep)."""

from __future__ import annotations

from typing import Any


def respond(messages: list[dict[str, Any]], context: Any) -> str:
    return "good" if int(context.run) % 2 else "bad"
