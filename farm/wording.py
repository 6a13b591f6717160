"""Counts as people read them, one way everywhere: ``1 case``, ``2 cases``, ``1250 runs`` (digits as
before: scripts read these lines)."""

from __future__ import annotations


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, with an ``s`` unless ``n`` is 1 (the farm's words all take a plain ``s``)."""
    return f"{n} {word if n == 1 else word + 's'}"


__all__ = ["plural"]
