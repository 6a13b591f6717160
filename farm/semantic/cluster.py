"""Clusters of meaning over a case's distinct answers.

One case's answers are all on one topic, so what separates its meanings is relative: how much
closer some answers are to each other than to the rest. Seven refusals in three wordings (cosine
similarity 0.45–0.87 to each other) and three wrong answers (0.06–0.15 from the refusals) are two
meanings, though one absolute threshold calibrated on pairs across topics (0.6) cuts the refusals
in two (issue 46). So the answers are clustered hierarchically (average linkage over cosine
distance, scipy) and the tree is cut at a similarity that adapts to the case: the case's typical
pair (the median similarity of its distinct answers' pairs) plus ``RELATIVE_MARGIN``. The
absolute threshold holds both ends: clusters at least ``SIMILARITY_THRESHOLD`` alike always join
(the "all the same" end: paraphrases stay one meaning whatever the case), and none join below
``RELATIVE_FLOOR`` (the "all different" end: unrelated answers stay apart). Deterministic;
quadratic in the (sampled, at most a few hundred) distinct answers. The same clusters give
``semantic_consistency`` and ``farm assess``'s modes. Measured on
``benchmarks/semantic_modes.json`` (``benchmarks/semantic_modes.py``, ``benchmarks/README.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from farm.semantic.blas import loading_blas
from farm.semantic.cache import answers_key, embedding_cache
from farm.semantic.embedder import embed

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from farm.semantic.minilm import Matrix

SIMILARITY_THRESHOLD = 0.6
"""Cosine similarity (all-MiniLM-L6-v2) at or above which two answers mean the same whatever else
the case said. Calibrated on ``benchmarks/semantic_calibration.json``: 20 paraphrase pairs (min
0.630, median 0.878) and 20 pairs that differ (max 0.618, median 0.149); 0.6 gets 39 of 40 right,
the best of 0.40–0.90 in steps of 0.05 (``benchmarks/semantic_calibrate.py`` re-runs it;
``benchmarks/README.md``)."""

RELATIVE_MARGIN = 0.25
"""How much more alike than the case's median pair two clusters must be (average linkage) to join.
The best mean adjusted Rand index on ``benchmarks/semantic_modes.json`` lies on a plateau from 0.25
to 0.325 (0.15: 0.71, 0.25: 0.76); the smallest of it."""

RELATIVE_FLOOR = 0.3
"""The least similarity at which clusters join whatever the case: unrelated answers (median 0.149
in the calibration's pairs that differ) never do; the modes' figure is the same from 0.2 to 0.35."""


@dataclass
class Cluster:
    """Answers of one meaning: ``count`` runs, ``example`` the most frequent answer."""

    example: str
    count: int
    members: list[int] = field(default_factory=list)
    """Indices of the distinct answers in it, as given to ``cluster_texts``, most frequent first."""


def cluster_texts(texts: list[str], counts: list[int], threshold: float = SIMILARITY_THRESHOLD) -> list[Cluster]:
    """Clusters of ``texts`` (distinct answers, ``counts[i]`` runs each), largest first."""
    if not texts:
        return []
    return cluster_vectors(embed(texts), texts, counts, threshold)


def cluster_vectors(vectors: Matrix, texts: list[str], counts: list[int],
                    threshold: float = SIMILARITY_THRESHOLD) -> list[Cluster]:
    """Clusters of answers already embedded (``vectors[i]`` is ``texts[i]``'s), largest first; ties
    in size keep the order of their most frequent answers (then of ``texts``)."""
    return clusters_of(meaning_labels(vectors, threshold), texts, counts)


def case_clusters(texts: list[str], counts: list[int], vectors: Callable[[], Matrix]) -> list[Cluster]:
    """``cluster_vectors(vectors(), texts, counts)``, its labels kept by the distinct answers
    (``farm.semantic.cache``: in memory and on disk): a case answering as an earlier one did (in
    this process or a former one) asks for no vectors and clusters nothing."""
    cache, key = embedding_cache(), answers_key(texts)
    labels = cache.labels(key)
    if labels is None or len(labels) != len(texts):
        labels = tuple(meaning_labels(vectors()))
        cache.keep_labels(key, labels)
    return clusters_of(list(labels), texts, counts)


def clusters_of(labels: list[int], texts: list[str], counts: list[int]) -> list[Cluster]:
    """The clusters that ``labels`` (one per text) make, as ``cluster_vectors`` gives them."""
    order = sorted(range(len(texts)), key=lambda i: (-counts[i], i))
    clusters: dict[int, Cluster] = {}
    for i in order:
        found = clusters.get(labels[i])
        if found is None:
            clusters[labels[i]] = Cluster(example=texts[i], count=counts[i], members=[i])
        else:
            found.count += counts[i]
            found.members.append(i)
    return sorted(clusters.values(), key=lambda c: -c.count)


def case_threshold(similarity: NDArray[np.floating[Any]], threshold: float = SIMILARITY_THRESHOLD) -> float:
    """The similarity at which this case's clusters join: its median pair plus ``RELATIVE_MARGIN``,
    between ``RELATIVE_FLOOR`` and ``threshold``."""
    import numpy as np

    pairs = similarity[np.triu_indices(len(similarity), 1)]
    return min(threshold, max(RELATIVE_FLOOR, float(np.median(pairs)) + RELATIVE_MARGIN))


def meaning_labels(vectors: Matrix, threshold: float = SIMILARITY_THRESHOLD, relative: bool = True) -> list[int]:
    """A cluster number per row of ``vectors`` (unit-length embeddings): the average-linkage tree
    cut at ``case_threshold`` (at ``threshold`` itself when not ``relative``)."""
    if len(vectors) < 2:
        return [0] * len(vectors)
    import numpy as np

    rows = np.asarray(vectors, dtype=np.float64)
    similarity = rows @ rows.T
    similarity = (similarity + similarity.T) / 2  # exactly symmetric, as squareform wants
    distance = np.clip(1.0 - similarity, 0.0, 2.0)
    np.fill_diagonal(distance, 0.0)
    # fcluster joins clusters whose linkage distance is <= t: similarity >= the case's threshold
    cut = 1.0 - (case_threshold(similarity, threshold) if relative else threshold)
    if len(vectors) == 2:
        # one pair: its tree is one join at the pair's distance, so the cut is a comparison. The
        # same arithmetic as scipy's, without importing scipy.cluster (~0.08 s of CPU, a quarter of
        # a "yes"/"no" sweep's semantic step once its embeddings are cached)
        return [1, 1] if distance[0, 1] <= cut + 1e-9 else [1, 2]
    # scipy.cluster is imported only here: by a case with three distinct answers or more, never by
    # `farm test`'s start-up
    with loading_blas():  # scipy's own OpenBLAS: no threads spinning either
        from scipy.cluster.hierarchy import fcluster, linkage
        from scipy.spatial.distance import squareform

    tree = linkage(squareform(distance, checks=False), method="average")
    return [int(label) for label in fcluster(tree, cut + 1e-9, criterion="distance")]
