"""numpy's BLAS on one thread in a process that embeds, from numpy's import on.

numpy's OpenBLAS starts a thread per core when numpy is imported, and each spins waiting for work
before it sleeps: on 2 cores ~0.07 s of CPU that a sweep's first embedding paid outside its own
thread (the "by difference" share of ``benchmarks/semantic_share.py`` against its "inside" one),
for products that run on one thread anyway (``one_blas_thread``). So the semantic step imports
numpy through ``import_numpy``: OpenBLAS is asked for one thread (``OPENBLAS_NUM_THREADS``, unless
the user set it) and the environment is put back once numpy is loaded. A process that another
thread starts in those ~0.04 s inherits the setting (its own BLAS on one thread as well).
"""

from __future__ import annotations

import os
import sys
import threading

_ENV = "OPENBLAS_NUM_THREADS"
_lock = threading.Lock()


def import_numpy() -> None:
    """Loads numpy, its BLAS with one thread, unless it is loaded already or the user chose."""
    with _lock:
        if "numpy" in sys.modules or _ENV in os.environ:
            return
        os.environ[_ENV] = "1"
        try:
            import numpy  # noqa: F401
        finally:
            os.environ.pop(_ENV, None)


def one_blas_thread() -> None:
    """BLAS on one thread in this process, numpy loaded before the farm or not: OpenBLAS's threads
    spin while they wait, and on a machine whose cores also serve the sweep (its event loop, its
    workers) that spinning cost a 100-run sweep 5x its wall instead of 1.6x. The embeddings run on
    their own thread anyway."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
