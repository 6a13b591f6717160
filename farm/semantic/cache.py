"""Embeddings kept by text in each process, least recently used first out (issue 45).

A sweep's cases often share answers ("good"/"bad", the same refusal): each distinct text is run
through the model once per process, and a case whose distinct answers are all known embeds
nothing (nor loads the model). On a worker the process outlives the sweep, so the cache serves
the next sweeps too. Keyed by a 16-byte hash of the text; bounded by ``FARM_SEMANTIC_CACHE``
(``farm.settings``), ~1.8 KB an entry. ``stats()`` counts what the model embedded and what was reused.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from farm.semantic.minilm import Matrix


def text_key(text: str) -> bytes:
    """The cache's key of ``text``: a hash, so a long answer costs 16 bytes, not its length."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


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

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._rows: OrderedDict[bytes, Matrix] = OrderedDict()
        self._lock = threading.Lock()
        self._embedded = 0
        self._reused = 0

    def embed(self, texts: list[str], compute: Callable[[list[str]], Matrix]) -> Matrix:
        """Embeddings of ``texts`` (a row each, in order): known ones from the cache, the others
        from ``compute`` (called once, with each new text once, and not at all when none is new)."""
        import numpy as np

        keys = [text_key(t) for t in texts]
        found: dict[bytes, Matrix] = {}
        with self._lock:
            for key in keys:
                row = self._rows.get(key)
                if row is not None:
                    self._rows.move_to_end(key)
                    found[key] = row
        new = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if new:  # the model is loaded (by ``compute``) only now
            rows = compute(list(new.values()))
            fresh = {k: rows[i].copy() for i, k in enumerate(new)}  # a copy: the batch is not kept alive
            found.update(fresh)
            self._keep(fresh)
        with self._lock:
            self._embedded += len(new)
            self._reused += len(texts) - len(new)
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

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(embedded=self._embedded, reused=self._reused, entries=len(self._rows), limit=self.limit)

    def clear(self) -> None:
        """Forget every embedding and zero the counts (the limit stays)."""
        with self._lock:
            self._rows.clear()
            self._embedded = self._reused = 0


_cache_lock = threading.Lock()
_cache: EmbeddingCache | None = None


def embedding_cache() -> EmbeddingCache:
    """This process's cache, sized by ``FARM_SEMANTIC_CACHE`` when first used."""
    global _cache
    with _cache_lock:
        if _cache is None:
            from farm.settings import semantic_cache_entries

            _cache = EmbeddingCache(semantic_cache_entries())
        return _cache


def _forget_cache() -> None:
    # A forked child keeps its parent's embeddings but not its locks: one held by a parent's thread at
    # the fork would never be released in the child.
    global _cache_lock
    _cache_lock = threading.Lock()
    if _cache is not None:
        _cache._lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_cache)
