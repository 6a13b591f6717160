"""all-MiniLM-L6-v2 sentence embeddings in numpy: the BERT forward pass over the packaged weights.

Why not sentence-transformers: importing it (torch, transformers, scikit-learn) costs about 5 s of
CPU in every process that aggregates a case, more than embedding a thousand answers; this file
needs only numpy (no scipy: ``_gelu``), the ``tokenizers`` wheel and the weights file. The figures
match sentence-transformers' (issue 46's printed similarities to two decimals:
``tests/semantic/test_semantic_model.py``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

MAX_TOKENS = 256
"""The model's ``max_seq_length``: longer texts are cut (about 1,000 characters of English)."""

BATCH = 32
"""Texts per forward pass; sorted by length first, so a batch pads little."""

_HEADS = 12
_LAYERS = 6
_EPS = 1e-12

Matrix = NDArray[np.float32]

_CHUNK = 1 << 16
_K = np.float32(2 * math.sqrt(2.0))  # erfc's t = 1/(1 + z/2) at z = |x|/√2 is K/(K + |x|)
_Q = tuple(np.float32(c) for c in (0.1540775261, -0.7304439932, 1.272931681, -0.8500042517, 0.04598466309,
                                   -0.06523541742, 0.05698336283, 0.3820172989, 0.9991628013, -1.958620797))
"""``_gelu``'s polynomial in t, highest power first: log(Φ(−|x|)/t) + x²/2 for |x| ≤ 16."""


def _load_safetensors(path: Path) -> dict[str, Matrix]:
    """The F32 tensors of a ``.safetensors`` file (8-byte header size, JSON header, raw data), as
    read-only views of the file mapped in memory: shared by the processes of a machine, and not
    copied at each process's first embedding (43 MB of layers: ~0.03 s of its CPU)."""
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
        # numpy multiplies an unaligned array without BLAS (50x slower): a layer's matrix that a
        # file holds unaligned is copied (the packaged file's are all aligned); the embeddings are
        # only indexed.
        as_view = tensor.flags.aligned or "embeddings" in name
        tensors[name] = tensor if as_view else np.array(tensor, dtype=np.float32)
    return tensors


def _gelu(x: Matrix) -> Matrix:
    """BERT's exact (erf) GELU, x·Φ(x), as max(x, 0) − |x|·Φ(−|x|), with Φ(−|x|) =
    t·exp(Q(t) − x²/2) and t = K/(K + |x|) (erfc's form in Numerical Recipes; ``_Q``: a degree-9
    Chebyshev least-squares fit, relative error 6e-8 up to |x| = 16, past which Φ(−|x|) underflows).

    Not scipy's ``erf``: importing ``scipy.special`` cost more CPU than the model's load in every
    process that embeds, and its float32 ``erf`` is slower. 64k floats at a time, in place, so the
    ~30 passes stay in the cache. Within 4.8e-7 of scipy's values, 2.4e-7 of the exact ones
    (``benchmarks/README.md``, "The first process's load"). Overwrites ``x`` when it is contiguous:
    use the result."""
    flat = x.reshape(-1)
    buffers = [np.empty(min(flat.size, _CHUNK), dtype=np.float32) for _ in range(4)]
    for start in range(0, flat.size, _CHUNK):
        v = flat[start:start + _CHUNK]
        a, t, p, w = (b[:v.size] for b in buffers)
        np.absolute(v, out=a)
        np.add(a, _K, out=t)
        np.divide(_K, t, out=t)
        np.multiply(t, _Q[0], out=p)
        for c in _Q[1:-1]:
            np.add(p, c, out=p)
            np.multiply(p, t, out=p)
        np.add(p, _Q[-1], out=p)
        np.multiply(v, v, out=w)
        np.multiply(w, np.float32(0.5), out=w)
        np.subtract(p, w, out=p)
        np.exp(p, out=p)
        np.multiply(p, t, out=p)
        np.multiply(p, a, out=p)
        np.maximum(v, np.float32(0.0), out=v)
        np.subtract(v, p, out=v)
    return flat.reshape(x.shape)


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
        weight = self.w[name + ".weight"]
        # One product over every token of the batch: numpy multiplies a stack (batch, tokens, width)
        # one text at a time, each reading the whole matrix again (200 answers: 2.4 s → 0.9 s).
        rows = x.reshape(-1, x.shape[-1]) @ weight.T
        return np.asarray(rows.reshape(*x.shape[:-1], weight.shape[0]) + self.w[name + ".bias"], dtype=np.float32)

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
