"""all-MiniLM-L6-v2 sentence embeddings in numpy: the BERT forward pass over the packaged weights.

Why not sentence-transformers: importing it (torch, transformers, scikit-learn) costs about 5 s of
CPU in every process that aggregates a case, more than embedding a thousand answers; this file
needs only numpy, the ``tokenizers`` wheel and the weights file. The figures match
sentence-transformers' (issue 46's printed similarities to two decimals: ``tests/semantic/test_semantic_model.py``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import erf

MAX_TOKENS = 256
"""The model's ``max_seq_length``: longer texts are cut (about 1,000 characters of English)."""

BATCH = 32
"""Texts per forward pass; sorted by length first, so a batch pads little."""

_HEADS = 12
_LAYERS = 6
_EPS = 1e-12

Matrix = NDArray[np.float32]


def _load_safetensors(path: Path) -> dict[str, Matrix]:
    """The F32 tensors of a ``.safetensors`` file (8-byte header size, JSON header, raw data); the
    embedding tables (half the file) stay read-only views of the file mapped in memory, shared by
    the processes of a machine."""
    with path.open("rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    data = np.memmap(path, dtype=np.uint8, mode="r")
    tensors: dict[str, Matrix] = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        start, end = meta["data_offsets"]
        raw = data[8 + size + start:8 + size + end].view("<f4")
        tensor = raw.reshape(meta["shape"])
        # The layers' matrices are copied: a view of the file need not be aligned, and numpy
        # multiplies unaligned arrays without BLAS (50x slower); the embeddings are only indexed.
        tensors[name] = tensor if "embeddings" in name else np.array(tensor, dtype=np.float32)
    return tensors


def _gelu(x: Matrix) -> Matrix:
    # BERT's GELU is the erf one; scipy's erf is a ufunc (a numpy polynomial took a fifth of the time)
    return np.asarray(0.5 * x * (1.0 + erf(x * np.float32(1 / math.sqrt(2.0)))), dtype=np.float32)


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix) -> Matrix:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return np.asarray((x - mean) / np.sqrt(var + _EPS) * weight + bias, dtype=np.float32)


class MiniLM:
    """The encoder: ``embed(texts)`` gives one unit-length 384-float row per text."""

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest of each batch
        self.w = _load_safetensors(folder / "model.safetensors")

    def embed(self, texts: list[str]) -> Matrix:
        """Mean-pooled, normalised embeddings, in the order of ``texts``."""
        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            chosen = order[start:start + BATCH]
            out[chosen] = self._batch([texts[i] for i in chosen])
        return out

    def _batch(self, texts: list[str]) -> Matrix:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:ids.shape[1]]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        for layer in range(_LAYERS):
            x = self._layer(x, bias, f"encoder.layer.{layer}.")
        summed = (x * mask[:, :, None]).sum(1)
        pooled = summed / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return np.asarray(pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12), dtype=np.float32)

    def _dense(self, x: Matrix, name: str) -> Matrix:
        return np.asarray(x @ self.w[name + ".weight"].T + self.w[name + ".bias"], dtype=np.float32)

    def _layer(self, x: Matrix, bias: Matrix, p: str) -> Matrix:
        batch, length, width = x.shape
        head = width // _HEADS

        def split(t: Matrix) -> Any:
            return t.reshape(batch, length, _HEADS, head).transpose(0, 2, 1, 3)

        q = split(self._dense(x, p + "attention.self.query"))
        k = split(self._dense(x, p + "attention.self.key"))
        v = split(self._dense(x, p + "attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
        attended = self._dense(context, p + "attention.output.dense")
        x = _layer_norm(attended + x, self.w[p + "attention.output.LayerNorm.weight"],
                        self.w[p + "attention.output.LayerNorm.bias"])
        hidden = _gelu(self._dense(x, p + "intermediate.dense"))
        return _layer_norm(self._dense(hidden, p + "output.dense") + x, self.w[p + "output.LayerNorm.weight"],
                           self.w[p + "output.LayerNorm.bias"])
