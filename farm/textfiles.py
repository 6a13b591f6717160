"""Reading a text file the user named: one clear InputError (exit 2) for a missing, unreadable or
non-UTF-8 file, never a traceback."""

from __future__ import annotations

from pathlib import Path

from farm.errors import InputError


def read_utf8(path: Path, what: str, *, kind: str = "a farm JSON report", noun: str = "the report") -> str:
    """The file's text; InputError naming ``what`` (e.g. "BASE a.json"), the problem, and the file
    expected there (``kind``, ``noun``)."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what}: not UTF-8 text (byte {exc.start + 1}); is it {kind}?") from None
    except OSError as exc:
        raise InputError(f"{what}: cannot read {noun}: {exc.strerror or exc}") from None


__all__ = ["read_utf8"]
