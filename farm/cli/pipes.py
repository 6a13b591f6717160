"""A reader that went away (``farm … | head -3``) is not a failure of the command.

Python raises ``BrokenPipeError`` on the next write to a pipe whose reader closed it. Left alone
it ends the command half-way: ``-o`` files not yet written, the exit code lost. Instead the
stream that broke is pointed at the null device (the fix Python's documentation gives for
SIGPIPE) and the command goes on: what it writes to files and the code it returns are the same
with or without a reader.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, TextIO, cast


class ReaderSafeStream:
    """A text stream whose writes go to the null device once its reader is gone."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_null()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_null()

    def _to_null(self) -> None:
        self.reader_gone = True
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._stream.fileno())  # pending and later bytes go nowhere, quietly
        finally:
            os.close(null)
        with contextlib.suppress(OSError):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_standard_streams() -> None:
    """Make stdout and stderr survive a reader that left (idempotent)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None or isinstance(stream, ReaderSafeStream):
            continue
        try:
            stream.fileno()
        except (OSError, ValueError, AttributeError):  # not a real file (a test runner's buffer): leave it
            continue
        setattr(sys, name, cast(TextIO, ReaderSafeStream(stream)))


__all__ = ["ReaderSafeStream", "guard_standard_streams"]
