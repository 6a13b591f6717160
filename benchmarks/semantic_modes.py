"""How well one case's answers are clustered into its modes (issue 46, SPEC 16), against a true grouping.

    python3 benchmarks/semantic_modes.py        # needs pip install -e '.[semantic]'

Reads ``benchmarks/semantic_modes.json``: cases (and, apart, held-out cases written after the
clustering's margin and floor were chosen) of failed answers (refusals, wrong numbers or facts,
off-topic answers, format errors, hedges, errors), each distinct answer with its run count and its
true mode. Prints, per case and on average, the adjusted Rand index (over runs: a run is one item)
of the clustering in force (``farm.semantic.cluster_vectors``: average linkage cut at the case's
own threshold) and of the rule it replaced (leader clustering at the absolute threshold 0.6), and
of the tree cut at the absolute threshold alone. 1 is the true grouping, 0 what chance gives.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from math import comb
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm.semantic import SIMILARITY_THRESHOLD, cluster_vectors
from farm.semantic.cluster import meaning_labels
from farm.semantic.embedder import embed


def adjusted_rand_index(truth: list[str], found: list[int]) -> float:
    """Hubert and Arabie's adjusted Rand index of two labelings of the same items."""
    def pairs(counts: Counter[Any]) -> int:
        return sum(comb(n, 2) for n in counts.values())

    together = pairs(Counter(zip(truth, found, strict=True)))
    in_truth, in_found, total = pairs(Counter(truth)), pairs(Counter(found)), comb(len(truth), 2)
    expected = in_truth * in_found / total
    best = (in_truth + in_found) / 2
    return 1.0 if best == expected else (together - expected) / (best - expected)


def leader_labels(vectors: Any, counts: list[int], threshold: float = SIMILARITY_THRESHOLD) -> list[int]:
    """The rule before issue 46: answers most frequent first, each joining the cluster whose leader
    it is most similar to when that reaches the threshold, else leading a new one."""
    order = sorted(range(len(counts)), key=lambda i: (-counts[i], i))
    leaders: list[int] = []
    labels = [0] * len(counts)
    for i in order:
        if leaders:
            similarity = vectors[leaders] @ vectors[i]
            best = int(similarity.argmax())
            if float(similarity[best]) >= threshold:
                labels[i] = best
                continue
        labels[i] = len(leaders)
        leaders.append(i)
    return labels


def fixed_cut_labels(vectors: Any) -> list[int]:
    """The same average-linkage tree cut at the absolute threshold alone (no relative cut)."""
    return meaning_labels(vectors, relative=False)


def in_force_labels(vectors: Any, texts: list[str], counts: list[int]) -> list[int]:
    labels = [0] * len(texts)
    for number, found in enumerate(cluster_vectors(vectors, texts, counts)):
        for i in found.members:
            labels[i] = number
    return labels


def per_run(labels: list[Any], counts: list[int]) -> list[Any]:
    return [label for label, count in zip(labels, counts, strict=True) for _ in range(count)]


METHODS = {"in force": "in force (relative cut)", "old": "old (leader, 0.6)", "at 0.6": "tree cut at 0.6"}


def scores(case: dict[str, Any]) -> dict[str, float]:
    """Each method's adjusted Rand index on one case, over its runs."""
    texts = [a["text"] for a in case["answers"]]
    counts = [a["count"] for a in case["answers"]]
    truth = per_run([a["mode"] for a in case["answers"]], counts)
    vectors = embed(texts)
    found = {"in force": in_force_labels(vectors, texts, counts), "old": leader_labels(vectors, counts),
             "at 0.6": fixed_cut_labels(vectors)}
    return {name: adjusted_rand_index(truth, per_run(labels, counts)) for name, labels in found.items()}


def measure(cases: list[dict[str, Any]]) -> dict[str, float]:
    """Each method's mean adjusted Rand index over ``cases``."""
    each = [scores(case) for case in cases]
    return {name: statistics.mean(s[name] for s in each) for name in METHODS}


def report(name: str, cases: list[dict[str, Any]]) -> None:
    print(f"{name:<52} {'modes':>5} {'in force':>9} {'old':>6} {'at 0.6':>7}")
    each = []
    for case in cases:
        found = scores(case)
        each.append(found)
        modes = len({a["mode"] for a in case["answers"]})
        print(f"{case['question'][:52]:<52} {modes:>5} {found['in force']:>9.2f} {found['old']:>6.2f} "
              f"{found['at 0.6']:>7.2f}")
    print(f"\n{name}: {len(cases)} cases, {sum(sum(a['count'] for a in c['answers']) for c in cases)} runs")
    for method, label in METHODS.items():
        values = [s[method] for s in each]
        exact = sum(value > 1 - 1e-9 for value in values)
        print(f"{label:<26} mean ARI {statistics.mean(values):.3f}  median {statistics.median(values):.3f}  "
              f"exactly right {exact}/{len(values)}")
    print()


def main() -> None:
    data = json.loads((Path(__file__).parent / "semantic_modes.json").read_text())
    report("cases (the margin and floor chosen on them)", data["cases"])
    report("held_out (written after)", data["held_out"])


if __name__ == "__main__":
    main()
