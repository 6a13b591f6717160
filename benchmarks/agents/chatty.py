"""A 100 ms agent whose every answer is distinct (benchmarks/semantic_cost.py --sweep)."""

from __future__ import annotations

import asyncio
from typing import Any

PLACES = ["Paris", "The museum", "The river", "This library", "The old bridge", "A small cafe", "The city hall"]
TRAITS = ["its quiet streets", "a long history of art", "the view at sunset", "friendly staff", "fresh bread",
          "a free concert each Friday", "its glass roof", "late opening hours", "a garden behind the hall"]


async def respond(messages: list[dict[str, Any]], context: Any) -> str:
    await asyncio.sleep(0.1)
    n = context.run
    return (f"{PLACES[n % len(PLACES)]} is known for {TRAITS[n % len(TRAITS)]}, "
            f"says answer {n} of case {context.case_id}.")
