"""Ctrl-C and SIGTERM during a sweep: stop scheduling, keep what ran, exit 130 or 143 (SPEC 10).

The first signal only asks the sweep to stop (``SweepStop``, which both executors obey): the
runs in flight get a short grace, every requested report is still written from the completed
runs, the summary is printed. A second signal exits at once; the run journal, flushed line by
line, still holds every completed run (``farm report`` renders it).

Signal handlers run on the main thread between two bytecodes, possibly in the middle of a
write to stderr: they write with ``os.write`` on the raw descriptor, never through Python's
buffered streams (which would raise "reentrant call").
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from types import FrameType, TracebackType
from typing import Any

from farm.errors import ExitCode
from farm.sweep.lifecycle import StopReason, SweepStop

EXIT_CODES = {signal.SIGINT: ExitCode.INTERRUPTED, signal.SIGTERM: ExitCode.TERMINATED}
"""Exit code per signal: 128 + the signal number, as shells report it."""


class StopSignals:
    """While active, SIGINT and SIGTERM request ``StopReason.INTERRUPTED`` on ``stop``; a second one
    ends the process at once with the first one's exit code."""

    def __init__(self, stop: SweepStop, *, first_notice: str, second_notice: str) -> None:
        self.stop = stop
        self.received: signal.Signals | None = None
        self._notices = (first_notice, second_notice)
        self._previous: dict[signal.Signals, Any] = {}

    @property
    def exit_code(self) -> ExitCode | None:
        """130 (SIGINT) or 143 (SIGTERM) once a signal came, else None."""
        return None if self.received is None else EXIT_CODES[self.received]

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signal.Signals(signum)
            self.stop.request(StopReason.INTERRUPTED)
            _say(self._notices[0])
            return
        _say(self._notices[1])
        os._exit(int(EXIT_CODES[self.received]))

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            for sig in EXIT_CODES:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 trace: TracebackType | None) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()


def _say(text: str) -> None:
    with contextlib.suppress(OSError):  # stderr closed: nothing to tell
        os.write(2, f"\nfarm: {text}\n".encode())


__all__ = ["EXIT_CODES", "StopSignals"]
