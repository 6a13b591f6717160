"""Waiting in tests without a fixed sleep: poll until a condition holds, or fail saying what was awaited."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, *, poll: float = 0.1) -> Any:
    """Poll ``predicate`` until it returns something true (returned), or raise after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(poll)
