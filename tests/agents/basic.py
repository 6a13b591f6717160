"""Small real agents for CLI and executor tests (referenced as py:tests/agents/basic.py:NAME)."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any


def _note_call(context: Any) -> None:
    calls = os.environ.get("FARM_TEST_CALLS")
    if calls:
        with open(calls, "a", encoding="utf-8") as f:
            f.write(f"{context.case_id} {context.run}\n")


def echo(messages: list[dict[str, Any]], context: Any) -> dict[str, Any]:
    """Echo the last message with the environment it was called in."""
    _note_call(context)
    return {
        "echo": messages[-1]["content"],
        "user": context.user_id,
        "team": context.team_id,
        "run": context.run,
        "case": context.case_id,
        "turns": sum(1 for m in messages if m["role"] == "user"),
    }


def text(messages: list[dict[str, Any]]) -> str:
    """A one-parameter agent answering plain text."""
    return f"you said: {messages[-1]['content']}"


def slow(messages: list[dict[str, Any]], context: Any) -> str:
    """A blocking agent: 0.3 s per call."""
    _note_call(context)
    time.sleep(0.3)
    return "done"


def slow_spans(messages: list[dict[str, Any]], context: Any) -> str:
    """``slow``, noting its call's span (monotonic start and end) in ``FARM_TEST_SPANS``: which
    calls overlapped, whatever the machine's speed."""
    start = time.monotonic()
    time.sleep(0.3)
    with open(os.environ["FARM_TEST_SPANS"], "a", encoding="utf-8") as f:
        f.write(f"{start} {time.monotonic()}\n")
    return "done"


async def slow_async(messages: list[dict[str, Any]], context: Any) -> str:
    await asyncio.sleep(0.3)
    return "done"


def hang(messages: list[dict[str, Any]], context: Any) -> str:
    """Never answers in time."""
    time.sleep(120)
    return "too late"


def crash(messages: list[dict[str, Any]], context: Any) -> str:
    raise RuntimeError("agent exploded")


def flaky(messages: list[dict[str, Any]], context: Any) -> str:
    """Right on odd runs only."""
    return "yes" if context.run % 2 else "no"


def stalls(messages: list[dict[str, Any]], context: Any) -> str:
    """Answers at once, except every run of a ``stall*`` case and run 2 of a ``mixed*`` case: those
    hang (still in flight when a test interrupts the sweep)."""
    _note_call(context)
    if context.case_id.startswith("stall") or (context.case_id.startswith("mixed") and context.run == 2):
        time.sleep(120)
    return "done"


def deep_crash(messages: list[dict[str, Any]], context: Any) -> str:
    """Raises from deep recursion: a traceback far longer than any report keeps."""

    def down(n: int) -> str:
        if n == 0:
            raise ValueError(f"bottom reached in case {context.case_id}")
        return down(n - 1)

    return down(200)
