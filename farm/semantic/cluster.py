"""Clusters of meaning over a case's distinct answers.

Leader clustering, weighted by how many runs gave each answer: answers are taken most frequent
first; each joins the cluster whose leader (its first, most frequent answer) it is most similar
to, when that cosine similarity reaches ``SIMILARITY_THRESHOLD``, else it leads a new cluster.
Deterministic, and quadratic only in the (sampled, at most a few hundred) distinct answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from farm.semantic.embedder import embed

if TYPE_CHECKING:
    from farm.semantic.minilm import Matrix

SIMILARITY_THRESHOLD = 0.6
"""Cosine similarity (all-MiniLM-L6-v2) at or above which two answers mean the same. Calibrated on
``benchmarks/semantic_calibration.json``: 20 paraphrase pairs (min 0.630, median 0.878) and 20
pairs that differ (max 0.618, median 0.149); 0.6 gets 39 of 40 right, the best of 0.40–0.90 in
steps of 0.05 (``benchmarks/semantic_calibrate.py`` re-runs it; ``benchmarks/README.md``)."""


@dataclass
class Cluster:
    """Answers of one meaning: ``count`` runs, ``example`` the most frequent answer."""

    example: str
    count: int
    members: list[int] = field(default_factory=list)
    """Indices of the distinct answers in it, as given to ``cluster_texts``."""


def cluster_texts(texts: list[str], counts: list[int], threshold: float = SIMILARITY_THRESHOLD) -> list[Cluster]:
    """Clusters of ``texts`` (distinct answers, ``counts[i]`` runs each), largest first."""
    if not texts:
        return []
    return cluster_vectors(embed(texts), texts, counts, threshold)


def cluster_vectors(vectors: Matrix, texts: list[str], counts: list[int],
                    threshold: float = SIMILARITY_THRESHOLD) -> list[Cluster]:
    """Clusters of answers already embedded (``vectors[i]`` is ``texts[i]``'s), largest first."""
    order = sorted(range(len(texts)), key=lambda i: (-counts[i], i))
    leaders: list[int] = []
    clusters: list[Cluster] = []
    for i in order:
        if leaders:
            similarity = vectors[leaders] @ vectors[i]
            best = int(similarity.argmax())
            if float(similarity[best]) >= threshold:
                clusters[best].count += counts[i]
                clusters[best].members.append(i)
                continue
        leaders.append(i)
        clusters.append(Cluster(example=texts[i], count=counts[i], members=[i]))
    return sorted(clusters, key=lambda c: -c.count)
