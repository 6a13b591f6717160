"""Agents that take their process down, for the poison-run tests (tests/workers/test_poison_runs.py).

Input ``exit`` calls ``os._exit(1)``, ``segv`` dereferences NULL through ctypes, ``sysexit``
raises ``SystemExit(3)``, ``interrupt`` raises ``KeyboardInterrupt``,
``slow`` sleeps FARM_TEST_SLEEP seconds; anything else answers ``ok``.
With FARM_TEST_CALLS set, each call appends "input pid" to that file first (fsynced: the
process may die right after).
"""

from __future__ import annotations

import ctypes
import os
import time
from typing import Any


def _log(text: str) -> None:
    path = os.environ.get("FARM_TEST_CALLS")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{text} {os.getpid()}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)


def agent(messages: list[dict[str, Any]]) -> str:
    text = messages[-1]["content"]
    _log(text)
    if text == "exit":
        time.sleep(float(os.environ.get("FARM_TEST_CRASH_DELAY", "0")))
        os._exit(1)
    if text == "segv":
        time.sleep(float(os.environ.get("FARM_TEST_CRASH_DELAY", "0")))
        ctypes.string_at(0)
    if text == "sysexit":
        raise SystemExit(3)
    if text == "interrupt":
        raise KeyboardInterrupt
    if text == "slow":
        time.sleep(float(os.environ.get("FARM_TEST_SLEEP", "2")))
    return "ok"
