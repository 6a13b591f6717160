"""How the farm uses Python's cyclic garbage collector: paused while a suite or a command's modules
load, eased while runs run.

Loading allocates millions of objects that all stay alive, so a collection during it only scans
them again (``paused``); importing a command's modules too (about 100 young collections, 20-40 ms
of each ``farm test`` start, issue 32). While runs run, every run allocates a few hundred short-lived objects and
a hundred runs are in flight: with CPython's default threshold (a young collection every 700 net
allocations) each young collection finds the runs in flight alive, promotes them, and the older
generations rescan them, with every full collection rescanning the plan and the imported modules
too. Measured on 3,000 HTTP runs at 50 in flight: 0.45–0.55 s of collections (a quarter of the
sweep's CPU) by default, 0.06 s with a young generation of 10,000 objects and the plan frozen
(``eased``). Cyclic garbage waits a little longer to be freed; reference counting, which frees
nearly everything a run leaves, is unchanged.

Both change process-wide settings and restore them on exit; ``eased`` counts its users, so
sweeps that overlap (threads of a library caller) restore the settings once, when the last ends.
A Celery worker does what ``eased`` does once it is ready, for good (``ease_for_good``): it runs
runs until it stops.

At exit a ``farm`` command skips the interpreter's last collections (``freeze_at_exit``).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import threading
from collections.abc import Iterator

YOUNG_GENERATION = 10_000
"""Net allocations between two young collections while runs run (CPython's default: 700)."""

_lock = threading.Lock()
_exit_frozen = False
_users = 0
_saved_threshold: tuple[int, int, int] = gc.get_threshold()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside (a suite loading: every object it makes stays alive). At the
    end what is alive is frozen (``gc.freeze``): otherwise the first young collection after would
    scan all that was made inside at once (28 ms after a command's imports, 10 ms after the
    history's, measured); ``eased``'s end unfreezes it with the rest, a sweep later."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.enable()


@contextlib.contextmanager
def eased() -> Iterator[None]:
    """While runs run: what is alive now (the plan, the imported modules) is left out of every
    collection (``gc.freeze``), and the young generation holds ``YOUNG_GENERATION`` objects."""
    global _users, _saved_threshold
    with _lock:
        if _users == 0:
            _saved_threshold = gc.get_threshold()
            _raise_young(_saved_threshold)
        _users += 1
        gc.freeze()
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                gc.set_threshold(*_saved_threshold)
                gc.unfreeze()  # the frozen objects rejoin the oldest generation: garbage among them is freed later


def ease_for_good() -> None:
    """``eased`` for the rest of the process (a worker, once ready: its modules and app loaded)."""
    with _lock:
        _raise_young(gc.get_threshold())
        gc.freeze()


def freeze_at_exit() -> None:
    """Leave every object alive at exit out of the interpreter's last collections (``gc.freeze``).

    Finalization collects the whole heap before it frees the modules: 0.2-0.3 s of a ``farm
    test`` process after a sweep (86,000 objects), 0.07 s frozen, measured on this project's
    machine. The process is ending, so its memory goes back to the system either way; the farm
    closes every file it writes where it writes it (none waits for a collection), and Python
    never promised ``__del__`` at exit. Registered once, by the first command a process runs;
    atexit runs it after the handlers registered later (last in, first out).
    """
    global _exit_frozen
    with _lock:
        if not _exit_frozen:
            _exit_frozen = True
            atexit.register(gc.freeze)


def _raise_young(threshold: tuple[int, int, int]) -> None:
    """``threshold`` with its young generation at least ``YOUNG_GENERATION`` (the older ones kept)."""
    gc.set_threshold(max(YOUNG_GENERATION, threshold[0]), *threshold[1:])
