"""Embeddings computed while the sweep goes on, in batches, off the caller's thread.

A case's distinct answers are embedded as they arrive, a batch at a time, on one background
thread per process (numpy and the tokenizer release the GIL): the sweep's event loop keeps
serving runs, and when the case finishes only its last, partial batch is left to embed. Without
this, a sweep would wait at the end of every case for all of its answers at once. A text whose
embedding is known already (``farm.semantic.cache``, in memory or on disk) is not sent: it is
read when the case's vectors are asked for, if they are (a case whose clusters are known needs none).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from farm.semantic.cache import embedding_cache
from farm.semantic.embedder import embed

if TYPE_CHECKING:
    from farm.semantic.minilm import Matrix

BATCH = 32
"""Answers embedded together (the encoder's own batch size): a case's last partial batch is
what its end waits for."""

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _forget_pool() -> None:
    # A forked child has none of its parent's threads: it starts its own pool when it needs one.
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="farm-semantic")
        return _pool


class BackgroundEmbeddings:
    """Texts given one by one (``add``), embedded ``BATCH`` at a time in the background."""

    def __init__(self) -> None:
        self._waiting: list[str] = []
        self._known: list[str] = []
        self._batches: list[tuple[list[str], Future[Matrix]]] = []

    def add(self, text: str) -> None:
        if embedding_cache().known(text):
            self._known.append(text)
            return
        self._waiting.append(text)
        if len(self._waiting) >= BATCH:
            self._submit()

    def _submit(self) -> None:
        batch, self._waiting = self._waiting, []
        self._batches.append((batch, _executor().submit(_half, batch)))

    def vectors(self) -> dict[str, Matrix]:
        """Every text added so far and its embedding (waits for the batches in flight)."""
        found: dict[str, Matrix] = {}
        if self._known:  # counted as reused when added
            found.update(zip(self._known, _half(self._known, count=False), strict=True))
        if self._waiting:
            batch, self._waiting = self._waiting, []
            self._batches.append((batch, _completed(_half(batch))))
        for batch, future in self._batches:
            found.update(zip(batch, future.result(), strict=True))
        return found


def _half(batch: list[str], count: bool = True) -> Matrix:
    """Embeddings kept in float16 until the case is clustered: half the memory (768 bytes an
    answer), and cosine similarities move by less than 1e-3."""
    vectors = embed(batch, count=count)  # numpy is imported there first (``farm.semantic.blas``)
    import numpy as np

    return vectors.astype(np.float16)


def _completed(vectors: Matrix) -> Future[Matrix]:
    done: Future[Matrix] = Future()
    done.set_result(vectors)
    return done
