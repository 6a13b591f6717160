"""Reading a text file the user named: one clear InputError (exit 2) for a missing, unreadable or
non-UTF-8 file, never a traceback."""

from __future__ import annotations

import codecs
from pathlib import Path

from farm.errors import InputError

CHECK_SLICE = 1 << 22
"""Bytes decoded at a time by ``read_utf8_bytes`` to check them (the text is not kept)."""


def read_utf8(path: Path, what: str, *, kind: str = "a farm JSON report", noun: str = "the report") -> str:
    """The file's text; InputError naming ``what`` (e.g. "BASE a.json"), the problem, and the file
    expected there (``kind``, ``noun``)."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what}: not UTF-8 text (byte {exc.start + 1}); is it {kind}?") from None
    except OSError as exc:
        raise InputError(f"{what}: cannot read {noun}: {exc.strerror or exc}") from None



def read_utf8_bytes(path: Path, what: str, *, kind: str = "a farm JSON report", noun: str = "the report") -> bytes:
    """``read_utf8``'s checks and errors, the file's bytes returned: a large file is held once,
    not as bytes and text at the same time."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{what}: cannot read {noun}: {exc.strerror or exc}") from None
    decoder, view = codecs.getincrementaldecoder("utf-8")(), memoryview(data)
    for at in range(0, max(1, len(data)), CHECK_SLICE):
        try:
            decoder.decode(view[at:at + CHECK_SLICE], final=at + CHECK_SLICE >= len(data))
        except UnicodeDecodeError as exc:
            raise InputError(f"{what}: not UTF-8 text (byte {at + exc.start + 1}); is it {kind}?") from None
    return data


__all__ = ["read_utf8", "read_utf8_bytes"]
