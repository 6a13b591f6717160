"""Warnings about which agent a suite runs against, made once the plan knows every agent.

A neuro-san case names its ``agent``; Yao's rule lets a ``package.yao`` found above the suite win
over it. Silently testing another agent than the file names is a trap: say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from farm.agents.ref import AgentRef


def manifest_overrides(agents: Mapping[tuple[str, str | None, str | None], AgentRef], given: str | None) -> list[str]:
    """One warning per suite file whose cases name an ``agent`` that a ``package.yao`` replaced
    (none when ``-n`` chose the agent: that is explicit)."""
    if given:
        return []
    notes = [f"{source}: agent {named!r} is not used: the project's {ref.target} wins (the package.yao found "
             "above the suite); pass -n to choose the agent"
             for (source, named, _), ref in agents.items()
             if named and ref.kind == "manifest" and named != Path(ref.target).name]  # naming the project: no trap
    return list(dict.fromkeys(notes))  # one per file, whatever its connections


__all__ = ["manifest_overrides"]
