"""Durations as people write them (``30s``, ``1m``, ``2m30s``, ``1h``, ``500ms``, ``.5s`` or plain
seconds, ``30``), and as reports print them.

``parse_duration`` is the one duration grammar: the Yao ``timeout`` field, neuro-san's
``timeout_in_seconds``, the ``--timeout`` flag and an HTTP agent manifest's ``timeout``. The unit
suffixes are Go's (``ms``, ``s``, ``m``, ``h``), since the Yao design borrows Go's
``time.ParseDuration``. ``format_ms`` is the one way reports print a duration.
"""

from __future__ import annotations

import math
import re

__all__ = ["format_ms", "parse_duration"]

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h)")
_WHOLE = re.compile(r"(?:(?:\d+(?:\.\d+)?|\.\d+)(?:ms|s|m|h))+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")


def parse_duration(value: str | int | float) -> float:
    """Return ``value`` in seconds (a positive float).

    Accepts a number of seconds (``30``, ``2.5``, ``"30"``) or number+unit parts
    (``"2m30s"``, ``"1h"``, ``"1.5s"``, ``"250ms"``).

    Raises:
        ValueError: when ``value`` is not a duration, or is not positive.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a duration: {value!r} (expected e.g. 30s, 1m, 2m30s, 1h)")
    try:
        seconds = _parse_text(value) if isinstance(value, str) else float(value)
    except OverflowError:
        raise ValueError(f"duration too large: {value!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"duration must be positive and finite, got {value!r}")
    return seconds


def _parse_text(text: str) -> float:
    compact = text.strip().lower().replace(" ", "")
    if _NUMBER.fullmatch(compact):
        return float(compact)
    if not compact or not _WHOLE.fullmatch(compact):
        raise ValueError(f"not a duration: {text!r} (expected e.g. 30s, 1m, 2m30s, 1h)")
    return sum(float(num) * _UNITS[unit] for num, unit in _PART.findall(compact))


def format_ms(ms: float) -> str:
    """A duration in milliseconds as reports print it: ``234ms`` under a second, else ``12.3s``.

    The one format of every report (markdown, summary, HTML; the HTML page's script mirrors it).
    """
    return f"{ms:.0f}ms" if ms < 1000 else f"{ms / 1000:.1f}s"
