"""An agent whose answer is fixed by the run index (the criteria scorecard tests).

Run n answers ``{"city": "Rome" for n ≤ ROME_RUNS else "Paris", "text": "hello" + " bye" for
n ≤ BYE_RUNS}``: over 10 runs ``contains hello`` is met 10 times, ``json_path $.city == Rome``
7 times and ``contains bye`` 4 times (``SCORECARD_BYE_RUNS`` moves the last). A second turn's
answer names the turn, so a multi-turn case's criteria are told apart.
"""

from __future__ import annotations

import json
import os
from typing import Any

ROME_RUNS = 7


def respond(messages: list[dict[str, Any]], context: Any) -> str:
    n = context.run
    bye_runs = int(os.environ.get("SCORECARD_BYE_RUNS", "4"))
    turns = sum(1 for m in messages if m.get("role") == "user")
    return json.dumps({"city": "Rome" if n <= ROME_RUNS else "Paris",
                       "text": "hello" + (" bye" if n <= bye_runs else ""), "turn": turns})
