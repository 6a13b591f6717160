"""Retry bias: do runs that needed a transient retry pass at a different rate? (SPEC 18)

A retried call (429, 5xx, a reset connection) may come back from a different replica, a
degraded model or after a timeout budget was spent: retries can shift the distribution a case is
measured on. Per case, the scored runs split into *retried* (``RunResult.retries > 0``) and
*clean*; Fisher's exact test (two-sided) compares their pass rates, and Benjamini–Hochberg
q-values across the cases that have both kinds of run control the false discovery rate.
``flagged``: q ≤ ``DEFAULT_ALPHA``.

Pure: scipy, nothing else.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from farm.models import CaseStats, RunResult, RunStatus, run_status
from farm.models.envelope import RetryBiasSummary
from farm.stats.measures import percent
from farm.stats.significance import bh_q_values
from farm.wording import plural

DEFAULT_ALPHA = 0.05
"""False discovery rate of the flags."""


class RetryTally:
    """A case's scored runs, retried or clean, passed or not (fed by ``CaseAccumulator``)."""

    def __init__(self) -> None:
        self.retried = [0, 0]  # runs, passed
        self.clean = [0, 0]

    def add(self, result: RunResult) -> None:
        status = run_status(result.status)
        if status is RunStatus.SKIPPED:
            return
        side = self.retried if result.retries > 0 else self.clean
        side[0] += 1
        side[1] += status is RunStatus.PASSED

    def figures(self) -> dict[str, Any] | None:
        """The case's ``retry_bias`` before the sweep-wide test (None: no run was retried)."""
        (r_runs, r_passed), (c_runs, c_passed) = self.retried, self.clean
        if r_runs == 0:
            return None
        return {"retried_runs": r_runs, "retried_passed": r_passed, "clean_runs": c_runs, "clean_passed": c_passed,
                "retried_pass_rate": percent(r_passed, r_runs),
                "clean_pass_rate": percent(c_passed, c_runs) if c_runs else None, "q": None, "flagged": False}


@functools.lru_cache(maxsize=1 << 14)
def fisher_p(r_passed: int, r_runs: int, c_passed: int, c_runs: int) -> float:
    """Two-sided Fisher exact p-value of retried vs clean pass rates (1.0 when a side has no run)."""
    if r_runs == 0 or c_runs == 0:
        return 1.0
    passed = r_passed + c_passed
    if passed in (0, r_runs + c_runs):  # every run passed (or none): the margins allow one table only
        return 1.0  # exact, and scipy (~0.3 s to import) stays out of a sweep that has nothing to test
    from scipy.stats import fisher_exact

    table = [[r_passed, r_runs - r_passed], [c_passed, c_runs - c_passed]]
    p = float(fisher_exact(table, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else min(1.0, p)


def _counts(bias: dict[str, Any]) -> tuple[int, int, int, int]:
    return (int(bias["retried_passed"]), int(bias["retried_runs"]), int(bias["clean_passed"]),
            int(bias["clean_runs"]))


def flag_retry_bias(stats: Sequence[CaseStats], alpha: float = DEFAULT_ALPHA) -> None:
    """Fill ``q`` and ``flagged`` of every case's ``retry_bias`` that has retried and clean runs."""
    tested = [s.retry_bias for s in stats if s.retry_bias and s.retry_bias.get("clean_runs")]
    p_values = [fisher_p(*_counts(bias)) for bias in tested]
    for bias, q in zip(tested, bh_q_values(p_values), strict=True):
        bias["q"] = round(q, 6)
        bias["flagged"] = q <= alpha


def retry_bias_line(results: Sequence[CaseStats]) -> str | None:
    """The sweep-level line: how many cases had retried runs, and which pass at a different rate."""
    retried = [(c.id, c.retry_bias) for c in results if c.retry_bias]
    if not any(_counts(bias)[0] or _counts(bias)[3] for _, bias in retried):
        return None  # no retried run passed, no clean run to compare with: the agent was never reached
    runs = sum(_counts(bias)[1] for _, bias in retried)
    line = f"retry bias: {plural(runs, 'run')} of {plural(len(retried), 'case')} needed a transient retry"
    flagged = [(cid, bias) for cid, bias in retried if bias.get("flagged")]
    if not flagged:
        return line + "; none passes at a different rate than its clean runs"
    shown = ", ".join(f"{cid} ({bias['retried_pass_rate']}% retried vs {bias['clean_pass_rate']}% clean, "
                      f"q={bias['q']})" for cid, bias in flagged[:10])
    return f"{line}; {len(flagged)} pass at a different rate when retried: {shown}"


def retry_bias_summary(stats: Sequence[CaseStats]) -> RetryBiasSummary | None:
    """The report's ``metadata.retry_bias``: cases and runs retried, the flagged case ids, the line."""
    line = retry_bias_line(stats)
    if line is None:
        return None
    retried = [c for c in stats if c.retry_bias]
    return RetryBiasSummary(cases=len(retried), retried_runs=sum(_counts(c.retry_bias)[1] for c in retried
                                                                 if c.retry_bias),
                            flagged=[c.id for c in retried if c.retry_bias and c.retry_bias.get("flagged")], line=line)
