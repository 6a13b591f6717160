"""Words of load-time errors shared by the check validators: the choices, and the closest one."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["one_of", "suggest"]


def suggest(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest choice, or ``""``."""
    close = difflib.get_close_matches(str(word).lower(), list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def one_of(choices: Iterable[str]) -> str:
    return "expected one of: " + ", ".join(choices)
