"""Simulated judges with known noise: verdicts that flip with probability p, labels with known TPR/TNR.

Shared by ``tests/stats/test_judge_trust_stats.py`` (500 criteria, rates asserted) and
``benchmarks/bench_judge_trust.py`` (the same figures printed, more settings).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from farm.stats.judge_labels import corrected_pass_rate, judge_accuracy
from farm.stats.judge_trust import flip_rate, true_flip_rate


@dataclass(frozen=True)
class FlipFigures:
    """Of ``criteria`` simulated criteria: how many intervals covered the true flip rate, how many
    were flagged ``judge_noisy``."""

    p: float
    k: int
    outputs: int
    criteria: int
    covered: int
    noisy: int

    @property
    def coverage(self) -> float:
        return self.covered / self.criteria

    @property
    def noisy_share(self) -> float:
        return self.noisy / self.criteria


def judged_verdicts(p: float, k: int, outputs: int, rng: np.random.Generator) -> np.ndarray:
    """``outputs`` × ``k`` verdicts (True: pass) of a judge that flips each true verdict with chance p."""
    truth = rng.random((outputs, 1)) < 0.7
    flips = rng.random((outputs, k)) < p
    return np.asarray(truth ^ flips)


def simulate_flips(p: float, k: int = 5, outputs: int = 50, criteria: int = 500, seed: int = 42) -> FlipFigures:
    """Re-judge ``outputs`` outputs of each of ``criteria`` criteria ``k`` times with a judge of noise p."""
    rng = np.random.default_rng(seed)
    truth = true_flip_rate(p, k)
    covered = noisy = 0
    for _ in range(criteria):
        found = flip_rate([list(row) for row in judged_verdicts(p, k, outputs, rng).tolist()])
        low, high = found.judge_flip_rate_ci
        covered += low <= truth <= high
        noisy += found.judge_noisy
    return FlipFigures(p, k, outputs, criteria, covered, noisy)


@dataclass(frozen=True)
class CorrectionFigures:
    """Of ``criteria`` simulated criteria: how often the corrected interval covered the true pass
    rate, how often the raw one did, and how many were refused."""

    true_pass_rate: float
    tpr: float
    tnr: float
    labels: int
    judged: int
    criteria: int
    corrected_covered: int
    raw_covered: int
    refused: int


def simulate_correction(true_pass_rate: float = 0.7, tpr: float = 0.9, tnr: float = 0.8, labels: int = 100,
                        judged: int = 200, criteria: int = 500, seed: int = 42) -> CorrectionFigures:
    """Per criterion: ``labels`` human-labelled outputs (half pass, half fail) judged by a judge of
    the given TPR/TNR, and ``judged`` unlabelled outputs passing with ``true_pass_rate``."""
    rng = np.random.default_rng(seed)
    corrected = raw = refused = 0
    for _ in range(criteria):
        human = np.arange(labels) < labels // 2
        judge = np.where(human, rng.random(labels) < tpr, rng.random(labels) >= tnr)
        accuracy = judge_accuracy(zip(human.tolist(), judge.tolist(), strict=True))
        truth = rng.random(judged) < true_pass_rate
        verdicts = np.where(truth, rng.random(judged) < tpr, rng.random(judged) >= tnr)
        found = corrected_pass_rate(int(verdicts.sum()), judged, accuracy)
        raw += found.raw_pass_rate_ci[0] <= true_pass_rate <= found.raw_pass_rate_ci[1]
        if found.corrected_pass_rate_ci is None:
            refused += 1
            continue
        corrected += found.corrected_pass_rate_ci[0] <= true_pass_rate <= found.corrected_pass_rate_ci[1]
    return CorrectionFigures(true_pass_rate, tpr, tnr, labels, judged, criteria, corrected, raw, refused)
