"""A python agent's callable: found by its spec, and what it returns turned into a ``Reply``.

Shared by the in-thread adapter (``farm.agents.python``) and the subprocesses of ``--isolate``
(``farm.agents.isolation``), which load and call the same function on their own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from farm.errors import AgentResolutionError
from farm.imports import resolve_callable
from farm.models import Reply


def load_callable(spec: str, base_dir: Path) -> Callable[..., Any]:
    """Import ``module:function`` or ``path/file.py:function`` (relative to ``base_dir``)."""
    try:
        return resolve_callable(spec, base_dir)
    except ValueError as exc:
        raise AgentResolutionError(f"python agent {spec!r}: {exc}") from None


def to_reply(value: Any) -> Reply:
    """Turn whatever a Python agent returned into a Reply."""
    if isinstance(value, Reply):
        return value
    if value is None:
        return Reply()
    if isinstance(value, str):
        return Reply(text=value)
    return Reply(structure=value)


__all__ = ["load_callable", "to_reply"]
