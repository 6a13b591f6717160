"""Reading a text file the user named: one clear InputError (exit 2) for a missing, unreadable or
non-UTF-8 file, never a traceback."""

from __future__ import annotations

from pathlib import Path

from farm.errors import InputError


def read_utf8(path: Path, what: str) -> str:
    """The file's text; InputError naming ``what`` (e.g. "BASE a.json") and the problem."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what}: not UTF-8 text (byte {exc.start + 1}); is it a farm JSON report?") from None
    except OSError as exc:
        raise InputError(f"{what}: cannot read the report: {exc.strerror or exc}") from None


__all__ = ["read_utf8"]
