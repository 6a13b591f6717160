"""Run durations as a mergeable histogram, for a matrix arm's p50/p95 latency (SPEC 22).

A case keeps its runs' durations as counts per bucket (``CaseStats.duration_histogram``):
buckets grow by ``RATIO`` (about 9 % wide), so any quantile read from the merged histograms of an
arm's cases is within 5 % of the exact one, however many runs, and the histograms travel in the
case statistics a worker stores (a distributed sweep's report reads the same figures). Pure.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

RATIO = 2 ** (1 / 8)
"""Each bucket's upper edge over its lower one."""


def bucket_of(duration_ms: float) -> int:
    """The bucket of a duration: ``floor(log_RATIO(ms))``; durations under 1 ms share bucket -1."""
    return -1 if duration_ms < 1.0 else math.floor(math.log(duration_ms, RATIO))


def bucket_value(bucket: int) -> float:
    """What a bucket stands for: the geometric middle of its edges (0.5 ms for the lowest)."""
    return 0.5 if bucket < 0 else RATIO ** (bucket + 0.5)


class DurationHistogram:
    """Counts per bucket of one case's runs."""

    def __init__(self) -> None:
        self.counts: Counter[int] = Counter()

    def add(self, duration_ms: float) -> None:
        self.counts[bucket_of(duration_ms)] += 1

    def figures(self) -> dict[str, int]:
        """As ``CaseStats.duration_histogram`` holds it (JSON keys are strings)."""
        return {str(bucket): count for bucket, count in sorted(self.counts.items())}


def merged(histograms: Iterable[Mapping[str, int] | None]) -> Counter[int]:
    total: Counter[int] = Counter()
    for histogram in histograms:
        for bucket, count in (histogram or {}).items():
            total[int(bucket)] += count
    return total


def quantile(counts: Mapping[int, int], q: float) -> float | None:
    """The ``q`` quantile (0–1) of the durations counted, in ms (None: no run), rounded to 0.1 ms."""
    n = sum(counts.values())
    if n == 0:
        return None
    rank, seen = max(1, math.ceil(q * n)), 0
    for bucket in sorted(counts):
        seen += counts[bucket]
        if seen >= rank:
            return round(bucket_value(bucket), 1)
    return None  # pragma: no cover - the last bucket always reaches n


__all__ = ["DurationHistogram", "bucket_of", "bucket_value", "merged", "quantile"]
