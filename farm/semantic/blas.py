"""BLAS on one thread in a process that embeds, from the moment its library is loaded.

numpy's OpenBLAS (and scipy's own copy) starts a thread per CPU when it is loaded, and each spins
waiting for work before it sleeps: ~0.035 s of CPU on 2 cores, on another thread than the one that
embeds (the semantic step's "by difference" share in ``benchmarks/semantic_share.py`` was twice
its "inside" one), for products that run on one thread anyway (``one_blas_thread``). OpenBLAS
counts the CPUs its loading thread may run on, so the semantic step loads numpy and scipy with
that thread pinned to one CPU (``loading_blas``), then unpins it. Affinity belongs to a thread: the
environment, the sweep's other threads and the agents they start are untouched (an
``OPENBLAS_NUM_THREADS`` set around the import reached agents started meanwhile).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_numpy_pinned = False
"""Whether ``import_numpy`` loaded this process's numpy pinned: its BLAS has no threads to limit."""


def _new_lock() -> None:
    global _lock
    _lock = threading.Lock()  # a fork while another thread held it must not leave the child locked


os.register_at_fork(after_in_child=_new_lock)


@contextlib.contextmanager
def loading_blas() -> Iterator[bool]:
    """Imports in this block that load a BLAS library start no BLAS threads (Linux; elsewhere, or
    where the affinity cannot be set, they load as usual: the block is given False)."""
    with _lock:
        allowed = _pin_to_one_cpu()
        try:
            yield allowed is not None
        finally:
            if allowed is not None:
                with contextlib.suppress(OSError):  # CPUs taken away meanwhile: slower, not wrong
                    os.sched_setaffinity(0, allowed)


def _pin_to_one_cpu() -> set[int] | None:
    """This thread on the first CPU it may use; the CPUs it may use before, or None if unpinned."""
    try:
        allowed = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {min(allowed)})
    except (AttributeError, OSError):
        return None
    return allowed


def import_numpy() -> None:
    """Loads numpy, its BLAS without threads, unless it is loaded already."""
    global _numpy_pinned
    if "numpy" not in sys.modules:
        with loading_blas() as pinned:
            import numpy  # noqa: F401

            _numpy_pinned = pinned


def one_blas_thread() -> None:
    """BLAS on one thread in this process, numpy loaded before the farm or not: OpenBLAS's threads
    spin while they wait, and on a machine whose cores also serve the sweep (its event loop, its
    workers) that spinning cost a 100-run sweep 5x its wall instead of 1.6x. The embeddings run on
    their own thread anyway. Nothing to do when ``import_numpy`` loaded numpy pinned (threadpoolctl's
    import and its scan of the loaded libraries: ~5 ms of a first process)."""
    if _numpy_pinned:
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
