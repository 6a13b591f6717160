"""An agent whose pass rate the test sets, deterministically (for history and comparison tests).

``quality`` answers "yes" on the runs whose index modulo 10 falls under 10 × q, so q = 0.7 passes
runs 1–7 of every 10 against ``"expected": "yes"``. q comes from the case's ``metadata.quality``,
else the file named by ``FARM_TEST_QUALITY_FILE`` (read at every call: a test changes the agent
between sweeps while workers keep running), else ``FARM_TEST_QUALITY``, else 1.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def _quality(context: Any) -> float:
    metadata = getattr(context, "metadata", None) or {}
    if "quality" in metadata:
        return float(metadata["quality"])
    path = os.environ.get("FARM_TEST_QUALITY_FILE")
    if path:
        return float(Path(path).read_text(encoding="utf-8").strip())
    return float(os.environ.get("FARM_TEST_QUALITY", "1"))


def quality(messages: list[dict[str, Any]], context: Any) -> str:
    calls = os.environ.get("FARM_TEST_CALLS")
    if calls:
        with open(calls, "a", encoding="utf-8") as f:
            f.write(f"{context.case_id} {context.run}\n")
    return "yes" if (context.run - 1) % 10 < round(10 * _quality(context)) else "no"
