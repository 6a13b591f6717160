"""A judge held against human labels (SPEC 23): TPR, TNR and the pass rate corrected for its errors.

- TPR: of outputs a human passed, the share the judge passed; TNR: of outputs a human failed, the
  share the judge failed; each with its 95 % Wilson interval.
- The corrected pass rate is Rogan–Gladen's (raw + TNR − 1) / (TPR + TNR − 1), clipped to 0..1.
  Its interval is the delta method on Agresti–Coull-adjusted inputs (after Lang & Reiczigel
  2014): the raw rate's, the TPR's and the TNR's uncertainty all widen it, and the adjustment
  keeps it honest at 0 % or 100 % where the plain delta method collapses to a point.
- No correction when TPR + TNR ≤ 1 (the judge is no better than a coin: the formula divides by
  zero or flips the sign) or with fewer than ``MIN_LABELS`` labels of either human verdict (the
  TPR or TNR would be a guess); ``refused`` says which.

Pure: arithmetic only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from farm.stats.measures import WILSON_Z, wilson_interval

MIN_LABELS = 20
"""Labels of each human verdict needed before the judge's error is corrected for."""


@dataclass(frozen=True)
class JudgeAccuracy:
    """Counts of human verdicts and the judge's agreement with them, with ``tpr``/``tnr`` (0..1,
    None without labels of that verdict) and their Wilson intervals."""

    human_passed: int
    judge_passed_those: int
    human_failed: int
    judge_failed_those: int

    @property
    def tpr(self) -> float | None:
        return self.judge_passed_those / self.human_passed if self.human_passed else None

    @property
    def tnr(self) -> float | None:
        return self.judge_failed_those / self.human_failed if self.human_failed else None

    @property
    def tpr_ci(self) -> tuple[float, float]:
        return wilson_interval(self.judge_passed_those, self.human_passed)

    @property
    def tnr_ci(self) -> tuple[float, float]:
        return wilson_interval(self.judge_failed_those, self.human_failed)


def judge_accuracy(labelled: Iterable[tuple[bool, bool]]) -> JudgeAccuracy:
    """``JudgeAccuracy`` from (human verdict, judge verdict) pairs, True meaning pass."""
    counts = [0, 0, 0, 0]
    for human, judge in labelled:
        if human:
            counts[0] += 1
            counts[1] += judge
        else:
            counts[2] += 1
            counts[3] += not judge
    return JudgeAccuracy(*counts)


@dataclass(frozen=True)
class CorrectedPassRate:
    """The judge's raw pass rate (0..1) with its Wilson interval, and beside it the rate corrected
    for the judge's error with its interval, or ``refused`` saying why there is none."""

    raw_pass_rate: float | None
    raw_pass_rate_ci: tuple[float, float]
    corrected_pass_rate: float | None = None
    corrected_pass_rate_ci: tuple[float, float] | None = None
    refused: str = ""


def refusal(accuracy: JudgeAccuracy) -> str:
    """Why the pass rate cannot be corrected with ``accuracy`` ("" when it can)."""
    for verdict, count in (("pass", accuracy.human_passed), ("fail", accuracy.human_failed)):
        if count < MIN_LABELS:
            return f"fewer than {MIN_LABELS} labels with human verdict {verdict!r} ({count})"
    tpr, tnr = accuracy.tpr or 0.0, accuracy.tnr or 0.0
    if tpr + tnr <= 1:
        return f"the judge is no better than chance: TPR + TNR = {tpr + tnr:.3f} <= 1"
    return ""


def corrected_pass_rate(passed: int, judged: int, accuracy: JudgeAccuracy) -> CorrectedPassRate:
    """The Rogan–Gladen correction of ``passed`` of ``judged`` verdicts by a judge of ``accuracy``."""
    raw = passed / judged if judged else None
    raw_ci = wilson_interval(passed, judged)
    why = refusal(accuracy) or ("" if judged else "no judged output to correct")
    if why:
        return CorrectedPassRate(raw, raw_ci, refused=why)
    assert raw is not None and accuracy.tpr is not None and accuracy.tnr is not None
    point = _clip((raw + accuracy.tnr - 1) / (accuracy.tpr + accuracy.tnr - 1))
    return CorrectedPassRate(raw, raw_ci, point, _interval(passed, judged, accuracy))


def _interval(passed: int, judged: int, accuracy: JudgeAccuracy, z: float = WILSON_Z) -> tuple[float, float]:
    z2 = z * z
    n_raw, n_pos, n_neg = judged + z2, accuracy.human_passed + 2, accuracy.human_failed + 2
    raw = (passed + z2 / 2) / n_raw
    tpr = (accuracy.judge_passed_those + 1) / n_pos
    tnr = (accuracy.judge_failed_those + 1) / n_neg
    youden = tpr + tnr - 1
    if youden <= 0:  # the adjusted figures can cross the line the plain ones cleared: know nothing
        return (0.0, 1.0)
    centre = (raw + tnr - 1) / youden
    pi = _clip(centre)
    variance = (raw * (1 - raw) / n_raw + pi * pi * tpr * (1 - tpr) / n_pos
                + (1 - pi) ** 2 * tnr * (1 - tnr) / n_neg) / (youden * youden)
    margin = z * math.sqrt(variance)
    return (_clip(centre - margin), _clip(centre + margin))


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))
