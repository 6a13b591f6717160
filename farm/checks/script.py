"""The ``script`` check: a user's Python callable decides (impure: it runs user code).

A script reference is ``module:function`` (imported with the suite's directory first on
``sys.path``), ``path/file.py:function`` (relative to the suite's directory), or the Yao
design's dotted ``module.function``. The callable gets ``(output, input, expected)`` and
returns a bool or ``{"pass": bool, "message": str}``; it may be ``async``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from farm.imports import call_user, resolve_callable

__all__ = ["ScriptResult", "call_script", "resolve_script"]


def resolve_script(ref: str, base_dir: str | Path = "") -> Callable[..., Any]:
    """The callable a ``script`` check names; ValueError says what is wrong with the reference."""
    return resolve_callable(ref, base_dir)


ScriptResult = tuple[bool, str]
"""``(passed, message)`` of one script call."""


async def call_script(fn: Callable[..., Any], output: Any, input: Any, expected: Any) -> ScriptResult:
    """Call the user's function and interpret its answer; exceptions propagate to the caller."""
    return interpret_result(await call_user(fn, output, input, expected))


def interpret_result(result: Any) -> ScriptResult:
    """A bool, or a dict with a bool ``pass`` (or ``passed``) and an optional ``message``."""
    if isinstance(result, bool):
        return result, "" if result else "script returned false"
    if isinstance(result, dict):
        flag = result.get("pass", result.get("passed"))
        if isinstance(flag, bool):
            message = result.get("message")
            text = "" if message is None else str(message)
            return flag, text or ("" if flag else "script returned pass: false")
    shown = repr(result)
    if len(shown) > 120:
        shown = shown[:117] + "..."
    return False, f"script returned {shown}; expected a bool or {{'pass': bool, 'message': str}}"
