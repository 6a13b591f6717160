"""Counts as people read them, one way everywhere: ``1 case``, ``2 cases``, ``1,250 runs``."""

from __future__ import annotations


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, with an ``s`` unless ``n`` is 1; thousands separated."""
    return f"{n:,} {word if n == 1 else word + 's'}"


__all__ = ["plural"]
