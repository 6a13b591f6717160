"""How far a judge can be trusted from its own repeats (SPEC 23): flip rate, noise, judge-alone failures.

A judge asked k times about one output should answer the same k times. ``judge_flip_rate`` is the
share of outputs whose k verdicts disagree; for a judge that flips each verdict with probability
p its true value is 1 − (1 − p)^k − p^k. Its interval is Clopper–Pearson (scipy's ``binomtest``,
"exact"): never below 95 % coverage, so ``judge_noisy`` (the interval's low end above 5 %) is a
claim the data back, not a coin toss near the line.

``judge_alone`` is per case: of the outputs that failed a judged check once, the share that the
majority of k fresh verdicts passes; those failures the judge alone explains.

Pure: scipy, nothing else.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

NOISY_FLIP_RATE = 0.05
"""``judge_noisy`` when the flip rate's interval lies wholly above this."""
CONFIDENCE = 0.95


@dataclass(frozen=True)
class FlipRate:
    """A criterion's ``judge_flip_rate`` (0..1) over ``outputs`` re-judged outputs, ``flipped`` of them
    with disagreeing verdicts; ``judge_flip_rate_ci`` its 95 % interval; ``judge_noisy`` as above."""

    outputs: int
    flipped: int
    judge_flip_rate: float | None
    judge_flip_rate_ci: tuple[float, float]
    judge_noisy: bool


@functools.lru_cache(maxsize=1 << 14)  # criteria repeat tables (0 of 50, 1 of 50...)
def exact_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Clopper–Pearson interval of ``successes / n`` (0..1); the whole range when ``n`` is 0."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 ≤ successes ≤ n, got {successes}/{n}")
    if n == 0:
        return (0.0, 1.0)
    from scipy.stats import binomtest  # scipy costs ~0.3 s to import: only when asked

    ci = binomtest(successes, n).proportion_ci(confidence_level=confidence, method="exact")
    return (float(ci.low), float(ci.high))


def disagree(verdicts: Sequence[Hashable]) -> bool:
    """True when the verdicts on one output (booleans, or ``judge_votes``' words) are not all the same."""
    return len(set(verdicts)) > 1


def flip_rate(verdicts_per_output: Iterable[Sequence[bool]]) -> FlipRate:
    """``FlipRate`` of a criterion from each re-judged output's verdicts (True: pass).

    An output with fewer than two verdicts cannot show a flip and is not counted.
    """
    outputs = flipped = 0
    for verdicts in verdicts_per_output:
        if len(verdicts) < 2:
            continue
        outputs += 1
        flipped += disagree(verdicts)
    return flip_counts(outputs, flipped)


def flip_counts(outputs: int, flipped: int) -> FlipRate:
    """``FlipRate`` of ``flipped`` of ``outputs`` outputs whose verdicts disagreed."""
    ci = exact_interval(flipped, outputs)
    rate = flipped / outputs if outputs else None
    return FlipRate(outputs, flipped, rate, ci, outputs > 0 and ci[0] > NOISY_FLIP_RATE)


def true_flip_rate(p: float, k: int) -> float:
    """The chance that k verdicts of a judge flipping each with probability ``p`` disagree."""
    return 1 - (1 - p) ** k - p**k


def majority(verdicts: Sequence[bool]) -> bool:
    """True when more than half of ``verdicts`` pass (a tie of an even number is no pass majority)."""
    return 2 * sum(verdicts) > len(verdicts)


@dataclass(frozen=True)
class JudgeAlone:
    """Of a case's ``failures`` (outputs that failed a judged check once), ``explained`` are passed by
    the majority of k fresh verdicts; ``share`` = explained / failures (None without failures)."""

    failures: int
    explained: int
    share: float | None


def judge_alone(outputs: Iterable[tuple[bool, Sequence[bool]]]) -> JudgeAlone:
    """``JudgeAlone`` from each output's (first verdict, k fresh verdicts), True meaning pass."""
    failures = explained = 0
    for first, fresh in outputs:
        if first or not fresh:
            continue
        failures += 1
        explained += majority(fresh)
    return JudgeAlone(failures, explained, explained / failures if failures else None)
