"""Calibrate the similarity threshold of the semantic figures (SPEC 16) and print its figures.

    python3 benchmarks/semantic_calibrate.py        # needs pip install -e '.[semantic]'

Reads ``benchmarks/semantic_calibration.json``: cosine similarity of each paraphrase and each
non-paraphrase pair, the accuracy of every candidate threshold, the threshold in force
(``farm.semantic.SIMILARITY_THRESHOLD``) and the done-when sets' semantic consistency.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm.semantic import SIMILARITY_THRESHOLD, cluster_texts
from farm.semantic.embedder import embed


def similarities(pairs: list[list[str]]) -> list[float]:
    vectors = embed([text for pair in pairs for text in pair])
    return [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]


def consistency(texts: list[str]) -> float:
    clusters = cluster_texts(texts, [1] * len(texts))
    return clusters[0].count / len(texts)


def main() -> None:
    data = json.loads((Path(__file__).parent / "semantic_calibration.json").read_text())
    same, different = similarities(data["paraphrase"]), similarities(data["different"])
    print(f"paraphrase pairs {len(same)}: min {min(same):.3f} median {statistics.median(same):.3f}")
    print(f"different pairs {len(different)}: max {max(different):.3f} median {statistics.median(different):.3f}")
    for threshold in [x / 100 for x in range(40, 91, 5)]:
        right = sum(s >= threshold for s in same) + sum(d < threshold for d in different)
        print(f"  threshold {threshold:.2f}: {right}/{len(same) + len(different)} pairs right")
    print(f"threshold in force: {SIMILARITY_THRESHOLD}")
    sets = data["done_when"]
    print(f"paraphrase set consistency {consistency(sets['paraphrase_set']):.2f} (needs >= 0.9)")
    print(f"unrelated set consistency {consistency(sets['unrelated_set']):.2f} (needs <= 0.5)")


if __name__ == "__main__":
    main()
