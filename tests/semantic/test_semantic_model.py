"""The numpy all-MiniLM-L6-v2 (``farm.semantic.minilm``) against the reference model's figures.

The reference figures are all-MiniLM-L6-v2's cosine similarities for issue 46's six answers, as
measured with the reference implementation and printed (two decimals) in that issue. No torch is
installed here (the ``[semantic]`` extra never brings it), so the reference is these numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.semantic_model import needs_model

ANSWERS = ["I cannot help with that.", "Sorry, I can't assist with this request.", "I'm unable to help with that.",
           "The answer is 41.", "It is 41.", "I believe the result is 41."]
REFERENCE = [
    [1.0, 0.45, 0.87, 0.10, 0.13, 0.06],
    [0.45, 1.0, 0.48, 0.11, 0.12, 0.09],
]
"""The first two rows of issue 46's table (the rest of the matrix follows by symmetry and was not printed)."""


@needs_model
def test_similarities_match_the_reference_models_to_two_decimals() -> None:
    from farm.semantic.embedder import embed

    vectors = embed(ANSWERS)
    assert vectors.shape == (6, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)  # unit length, as sentence-transformers'
    similarities = vectors[:2] @ vectors.T
    assert np.abs(similarities - np.array(REFERENCE)).max() <= 0.005 + 1e-6, np.round(similarities, 3)


def test_the_gelu_is_the_exact_erf_one_to_float32_precision() -> None:
    """``_gelu`` (numpy only, no scipy) against x·Φ(x) in float64 from ``math.erf``: over a dense grid
    of the activations' range, the tails, and a strided (non-contiguous) input."""
    import math

    from farm.semantic.minilm import _gelu

    grid = np.concatenate([np.linspace(-30, 30, 200_001), [0.0, -0.0, 1e-30, -1e-30, 16.0, -16.0, 40.0, -40.0]])
    values = grid.astype(np.float32)
    exact = np.array([v * 0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in values.astype(np.float64)])
    got = _gelu(values.copy())
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, exact, rtol=3e-7, atol=3e-7)
    strided = np.stack([values, values])[:, ::3]
    np.testing.assert_allclose(_gelu(strided), np.stack([exact, exact])[:, ::3], rtol=3e-7, atol=3e-7)


@pytest.mark.parametrize("padding", [0, 1])
def test_weights_are_views_of_the_file_unless_it_holds_them_unaligned(tmp_path: Path, padding: int) -> None:
    """A layer's matrix is used in place from the mapped file (no copy a process); one the file holds
    unaligned is copied (numpy multiplies an unaligned array without BLAS), with the same values."""
    import json

    from farm.semantic.minilm import _load_safetensors

    matrix = np.arange(12, dtype="<f4").reshape(3, 4)
    header = json.dumps({"layer.weight": {"dtype": "F32", "shape": [3, 4], "data_offsets": [padding, padding + 48]}})
    header += " " * (-(8 + len(header)) % 8)  # the data starts 8-aligned; `padding` bytes more shift the matrix
    path = tmp_path / "model.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header.encode() + b"\0" * padding + matrix.tobytes())
    loaded = _load_safetensors(path)["layer.weight"]
    np.testing.assert_array_equal(loaded, matrix)
    assert loaded.flags.aligned
    assert loaded.flags.writeable is (padding == 1)  # a copy is writeable, a view of the mapped file is not


@needs_model
def test_a_text_embeds_the_same_alone_and_in_a_padded_batch() -> None:
    """Each layer multiplies every token of a batch in one product: a text's embedding must not depend
    on the batch around it (its neighbours' lengths, its padding, which of two batches it falls in)."""
    from farm.semantic.minilm import BATCH, MiniLM
    from farm.semantic.weights import model_folder

    folder = model_folder()
    assert folder is not None
    encoder = MiniLM(folder)
    texts = [" ".join(ANSWERS[: 1 + i % len(ANSWERS)]) + f" Case {i}." for i in range(BATCH + 3)]
    together = encoder.embed(texts)
    alone = np.stack([encoder.embed([text])[0] for text in texts])
    assert together.shape == (BATCH + 3, 384)
    np.testing.assert_allclose(together, alone, atol=2e-6)
    assert np.abs(together @ together.T - alone @ alone.T).max() < 1e-5
