"""The suite's load, shown while it lasts: a million cases are read and planned for tens of
seconds before the first run starts (or, with ``--collect-only``, before the first id is listed).

``prepare_sweep`` tells a ``LoadProgress`` the cases of each batch it reads (``read=``). Nothing
is drawn for a load that ends within ``SHOW_AFTER_S``: a small suite's sweep starts without a
flash of a second progress bar. The line is transient (gone once the load ends) and drawn only
where the runs' progress bar would be: stderr a terminal, no ``--no-progress``.
"""

from __future__ import annotations

import os
import time
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

SHOW_AFTER_S = 1.0
"""A load shorter than this shows nothing (``FARM_LOAD_PROGRESS_AFTER`` seconds, when set)."""


def show_after_default() -> float:
    """``FARM_LOAD_PROGRESS_AFTER`` when it is a number of seconds, else ``SHOW_AFTER_S``."""
    try:
        return max(0.0, float(os.environ["FARM_LOAD_PROGRESS_AFTER"]))
    except (KeyError, ValueError):
        return SHOW_AFTER_S


class LoadProgress:
    """``with LoadProgress(console) as read: prepare_sweep(settings, read=read)``."""

    def __init__(self, console: Console, *, show_after_s: float | None = None) -> None:
        self._console = console
        self._show_after_s = show_after_default() if show_after_s is None else show_after_s
        self._started = time.monotonic()
        self._cases = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> LoadProgress:
        return self

    def __call__(self, cases: int) -> None:
        self._cases += cases
        if self._progress is None and time.monotonic() - self._started < self._show_after_s:
            return
        # The seconds since the load began (a bar's elapsed column would count from when it is drawn).
        counted, seconds = f"{self._cases:,}", f"{time.monotonic() - self._started:.0f}"
        if self._progress is None:
            from rich.progress import Progress, SpinnerColumn, TextColumn  # a load this long only

            self._progress = Progress(SpinnerColumn(), TextColumn("reading the suite: {task.fields[cases]} cases, "
                                                                  "{task.fields[seconds]} s"),
                                      console=self._console, transient=True)
            self._task = self._progress.add_task("load", total=None, cases=counted, seconds=seconds)
            self._progress.start()  # drawn at once, with what was read so far
        assert self._task is not None
        self._progress.update(self._task, cases=counted, seconds=seconds)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 _tb: TracebackType | None) -> None:
        if self._progress is not None:  # a bad suite or Ctrl-C too: the terminal is left clean
            self._progress.stop()


__all__ = ["SHOW_AFTER_S", "LoadProgress"]
