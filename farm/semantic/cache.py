"""Embeddings kept by text in each process, least recently used first out (issue 45).

A sweep's cases often share answers ("good"/"bad", the same refusal): each distinct text is run
through the model once per process, and a case whose distinct answers are all known embeds
nothing (nor loads the model). On a worker the process outlives the sweep, so the cache serves
the next sweeps too. Keyed by a 16-byte hash of the text; bounded by ``FARM_SEMANTIC_CACHE``
(``farm.settings``), ~1.8 KB an entry. ``stats()`` counts what the model embedded and what was reused.
A case's clusters are kept too, by its distinct answers (``labels``): a case answering as an
earlier one did is not clustered again. Behind both, the process's cache reads and writes
``farm.semantic.store`` (on disk, shared by the processes of a machine: the next ``farm test``).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from farm.semantic.blas import import_numpy
from farm.semantic.store import DiskStore, disk_store

if TYPE_CHECKING:
    from farm.semantic.minilm import Matrix


def text_key(text: str) -> bytes:
    """The cache's key of ``text``: a hash, so a long answer costs 16 bytes, not its length."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def answers_key(texts: list[str]) -> bytes:
    """The key of a case's clusters: a hash of its distinct answers' keys, in their order."""
    return hashlib.blake2b(b"".join(text_key(t) for t in texts), digest_size=16, person=b"farm-labels").digest()


@dataclass(frozen=True)
class CacheStats:
    """What this process's embedding cache did since it started (or was cleared)."""

    embedded: int
    """Texts the model embedded."""
    reused: int
    """Texts found in the cache instead."""
    entries: int
    """Embeddings held now."""
    limit: int
    """The most it holds (``FARM_SEMANTIC_CACHE``)."""


class EmbeddingCache:
    """Unit-length embeddings by text, at most ``limit`` of them (0: none kept); thread-safe."""

    def __init__(self, limit: int, store: Callable[[], DiskStore | None] | None = None) -> None:
        self.limit = limit
        self._store = store
        self._rows: OrderedDict[bytes, Matrix] = OrderedDict()
        self._labels: OrderedDict[bytes, tuple[int, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self._embedded = 0
        self._reused = 0

    def disk(self) -> DiskStore | None:
        return self._store() if self._store is not None else None

    def known(self, text: str) -> bool:
        """Whether ``text``'s embedding is here or on disk (no numpy, no model: nothing computed);
        a known text counts as reused (to be read with ``embed(count=False)`` if it is needed)."""
        key = text_key(text)
        with self._lock:
            found = key in self._rows
        if not found:
            store = self.disk()
            found = store is not None and store.has(key)
        if found:
            with self._lock:
                self._reused += 1
        return found

    def embed(self, texts: list[str], compute: Callable[[list[str]], Matrix], *, count: bool = True) -> Matrix:
        """Embeddings of ``texts`` (a row each, in order): known ones from the cache (or the disk),
        the others from ``compute`` (called once, with each new text once, and not at all when
        none is new). ``count=False``: texts already counted as reused (``known``) are not again."""
        import_numpy()
        import numpy as np

        keys = [text_key(t) for t in texts]
        found: dict[bytes, Matrix] = {}
        with self._lock:
            for key in keys:
                row = self._rows.get(key)
                if row is not None:
                    self._rows.move_to_end(key)
                    found[key] = row
        store = self.disk()
        if store is not None and len(found) < len(keys):
            read = {k: store.row(k) for k in keys if k not in found}
            on_disk = {k: np.frombuffer(r, dtype="<f4").astype(np.float32) for k, r in read.items() if r is not None}
            found.update(on_disk)
            self._keep(on_disk)
        new = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if new:  # the model is loaded (by ``compute``) only now
            rows = compute(list(new.values()))
            fresh = {k: rows[i].copy() for i, k in enumerate(new)}  # a copy: the batch is not kept alive
            found.update(fresh)
            self._keep(fresh)
            if store is not None and self.limit > 0:
                store.keep_rows({k: np.asarray(r, dtype="<f4").tobytes() for k, r in fresh.items()})
        with self._lock:
            self._embedded += len(new)
            self._reused += (len(texts) - len(new)) if count else 0
        if not keys:
            return compute([])
        return np.stack([found[key] for key in keys]).astype(np.float32, copy=False)

    def _keep(self, fresh: dict[bytes, Matrix]) -> None:
        if self.limit <= 0:
            return
        with self._lock:
            for key, row in fresh.items():
                self._rows[key] = row
                self._rows.move_to_end(key)
            while len(self._rows) > self.limit:
                self._rows.popitem(last=False)

    def labels(self, key: bytes) -> tuple[int, ...] | None:
        """A case's cluster labels kept by ``keep_labels`` (``answers_key`` of its answers)."""
        with self._lock:
            found = self._labels.get(key)
            if found is not None:
                self._labels.move_to_end(key)
                return found
        store = self.disk()
        found = store.labels(key) if store is not None else None
        if found is not None:
            self._keep_labels(key, found)
        return found

    def keep_labels(self, key: bytes, labels: tuple[int, ...]) -> None:
        self._keep_labels(key, labels)
        store = self.disk()
        if store is not None and self.limit > 0:
            store.keep_labels(key, labels)

    def _keep_labels(self, key: bytes, labels: tuple[int, ...]) -> None:
        if self.limit <= 0:
            return
        with self._lock:
            self._labels[key] = labels
            self._labels.move_to_end(key)
            while len(self._labels) > self.limit:
                self._labels.popitem(last=False)

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(embedded=self._embedded, reused=self._reused, entries=len(self._rows), limit=self.limit)

    def clear(self) -> None:
        """Forget every embedding and case (in this process) and zero the counts (the limit stays)."""
        with self._lock:
            self._rows.clear()
            self._labels.clear()
            self._embedded = self._reused = 0


_cache_lock = threading.Lock()
_cache: EmbeddingCache | None = None


def embedding_cache() -> EmbeddingCache:
    """This process's cache, sized by ``FARM_SEMANTIC_CACHE`` when first used."""
    global _cache
    with _cache_lock:
        if _cache is None:
            from farm.settings import semantic_cache_entries

            _cache = EmbeddingCache(semantic_cache_entries(), disk_store)
        return _cache


def _forget_cache() -> None:
    # A forked child keeps its parent's embeddings but not its locks: one held by a parent's thread at
    # the fork would never be released in the child.
    global _cache_lock
    _cache_lock = threading.Lock()
    if _cache is not None:
        _cache._lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_cache)
