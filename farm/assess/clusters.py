"""Failures grouped by meaning (SPEC 16): within a failure class, samples that say the same thing.

Seven refusals in three wordings and three wrong answers in three wordings of one case fail the
same check (one class), yet are two ways of failing: the distinct failures of a class are
clustered by the meaning of their samples (``farm.semantic``), so they become two groups of 7
and 3. Without the ``[semantic]`` extra, a group is one distinct sample, as before.

Without a judge, a class with more than one cluster names each mode ``<class>: <example>``; a
remembered mode of that form matches a cluster of the same class with a sample that means the same.
Failures of a class that took different tool-call paths (SPEC 21) are apart too: ``<class> via
search → answer`` (the path stands in for the class in the names above).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from farm.assess.models import Failure
from farm.reports.trajectory import path_text
from farm.stats.outputs import normalise_output

MODE_EXAMPLE_CHARS = 80
"""Characters of a cluster's example in a mode named without a judge."""

MATCH_SAMPLES = 20
"""A group's most frequent distinct samples compared with the remembered modes (each is embedded)."""


@dataclass
class FailureGroup:
    """Failures of one meaning: one judge call, or one mode without a judge."""

    failures: list[Failure] = field(default_factory=list)
    name: str = ""
    """The mode's name without a judge: the class, or ``<class>: <example>`` when the class splits."""


def _distinct(failures: Sequence[Failure]) -> list[FailureGroup]:
    groups: dict[tuple[str, tuple[str, ...], str, str], FailureGroup] = {}
    for failure in failures:
        key = (failure.failure_class, tuple(failure.path), failure.criteria, normalise_output(failure.sample))
        groups.setdefault(key, FailureGroup()).failures.append(failure)
    return list(groups.values())


def _by_meaning(groups: list[FailureGroup]) -> list[FailureGroup]:
    """The groups of one class merged by the meaning of their samples (unchanged without the model)."""
    from farm.semantic import cluster_texts, missing_requirement

    if len(groups) < 2 or missing_requirement() is not None:
        return groups
    clusters = cluster_texts([normalise_output(g.failures[0].sample) for g in groups],
                             [len(g.failures) for g in groups])
    return [FailureGroup([f for i in c.members for f in groups[i].failures]) for c in clusters]


def failure_groups(failures: Sequence[Failure]) -> list[FailureGroup]:
    """The case's failures by class and path (SPEC 21), then by meaning; most frequent first."""
    by_class: dict[tuple[str, tuple[str, ...]], list[FailureGroup]] = {}
    for group in _distinct(failures):
        by_class.setdefault((group.failures[0].failure_class, tuple(group.failures[0].path)), []).append(group)
    paths_of_class = Counter(failure_class for failure_class, _path in by_class)
    merged: list[FailureGroup] = []
    for (failure_class, path), groups in by_class.items():
        unit = failure_class if paths_of_class[failure_class] == 1 else f"{failure_class} via {path_text(path)}"
        meanings = _by_meaning(groups)
        for group in meanings:
            group.failures.sort(key=lambda f: f.run)
            example = _example(group.failures[0].sample)
            group.name = unit if len(meanings) == 1 else f"{unit}: {example}"
        merged += meanings
    return sorted(merged, key=lambda g: (-len(g.failures), g.failures[0].run))


def known_mode(group: FailureGroup, known: Sequence[str]) -> str:
    """The remembered mode a judge-less group is, else its name: one of the same class whose example
    means the same (cosine similarity at least ``SIMILARITY_THRESHOLD``) as any of the group's
    samples. Any, not only the group's own example: a mode's wordings can be less alike than that
    (clusters are cut per case), and another run may come first next time."""
    if group.name in known or ": " not in group.name:
        return group.name
    failure_class = group.name.split(": ", 1)[0]
    candidates = [m for m in known if m.startswith(failure_class + ": ")]
    if not candidates:
        return group.name
    from farm.semantic import SIMILARITY_THRESHOLD, missing_requirement
    from farm.semantic.embedder import embed

    if missing_requirement() is not None:
        return group.name
    counted = Counter(_example(f.sample) for f in group.failures)
    samples = [sample for sample, _ in counted.most_common(MATCH_SAMPLES)]
    vectors = embed([*samples, *(m.split(": ", 1)[1] for m in candidates)])
    similarity = (vectors[len(samples):] @ vectors[:len(samples)].T).max(axis=1)
    best = int(similarity.argmax())
    return candidates[best] if float(similarity[best]) >= SIMILARITY_THRESHOLD else group.name


def _example(sample: str) -> str:
    """A sample as a mode's name shows it: one line, at most ``MODE_EXAMPLE_CHARS``."""
    return " ".join(sample.split())[:MODE_EXAMPLE_CHARS]
