"""Load bias: do a case's runs pass at a different rate when the sweep was busy? (SPEC 25)

Under concurrency an agent may time out, get 429s or answer worse. Each run records
``in_flight``, the sweep's runs in flight as it began (``farm.models.load``). Per case the scored
runs are counted by ``in_flight`` (``InFlightTally``, fed by ``CaseAccumulator``: cases are
aggregated apart, on workers too); once every case is in, the sweep's median ``in_flight`` over
all scored runs splits each case's runs into *high* (started above it) and *low* (at or below).
A steady sweep starts nearly every run at its ``--parallel``, so the median is often the most
any run saw: then the runs at the median are the high ones and the low ones are those made while
the sweep filled up (``high_from``).
Fisher's exact test (two-sided) compares their pass rates, Benjamini–Hochberg q-values across
the cases with runs on both sides control the false discovery rate, and ``flagged`` is
q ≤ ``DEFAULT_ALPHA``: the method of ``farm.stats.retry_bias``.

Pure: scipy, nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

from farm.models import CaseStats, InFlightCount, LoadBias, LoadBiasSummary, RunResult, RunStatus, run_status
from farm.stats.measures import percent
from farm.stats.retry_bias import DEFAULT_ALPHA, fisher_p
from farm.stats.significance import bh_q_values
from farm.wording import plural

MAX_SHOWN = 10
"""Flagged cases the line names (the JSON lists them all)."""


class InFlightTally:
    """A case's scored runs by ``in_flight``, passed or not (fed by ``CaseAccumulator``)."""

    def __init__(self) -> None:
        self.counts: dict[int, list[int]] = {}  # in_flight -> [runs, passed]

    def add(self, result: RunResult) -> None:
        if result.in_flight is None or run_status(result.status) is RunStatus.SKIPPED:
            return
        count = self.counts.setdefault(result.in_flight, [0, 0])
        count[0] += 1
        count[1] += run_status(result.status) is RunStatus.PASSED

    def figures(self) -> LoadBias | None:
        """The case's ``load_bias`` before the sweep-wide split (None: no run knew its load)."""
        if not self.counts:
            return None
        return LoadBias(in_flight=[InFlightCount(in_flight=n, runs=r, passed=p)
                                   for n, (r, p) in sorted(self.counts.items())])


def sweep_median(cases: Sequence[LoadBias]) -> float | None:
    """The median ``in_flight`` over every scored run of ``cases`` (None: no run)."""
    totals: dict[int, int] = {}
    for bias in cases:
        for count in bias.in_flight:
            totals[count.in_flight] = totals.get(count.in_flight, 0) + count.runs
    runs = sum(totals.values())
    if runs == 0:
        return None
    ordered = sorted(totals.items())

    def nth(index: int) -> int:  # the index-th run (0-based) in order of in_flight
        seen = 0
        for value, count in ordered:
            seen += count
            if index < seen:
                return value
        return ordered[-1][0]

    return (nth((runs - 1) // 2) + nth(runs // 2)) / 2


def high_from(values: set[int], median: float) -> int | None:
    """The fewest runs in flight a high run starts with: the smallest value above the median; when
    none is above it, the median (runs below it, the sweep filling up, are then the low ones);
    None when every run started at the same load."""
    above = [v for v in values if v > median]
    if above:
        return min(above)
    return None if min(values) >= median else int(median)


def split(bias: LoadBias, median: float, threshold: int) -> LoadBias:
    """``bias`` with its runs split at ``threshold`` (``high_from``; its test not yet made)."""
    high = [c for c in bias.in_flight if c.in_flight >= threshold]
    low = [c for c in bias.in_flight if c.in_flight < threshold]
    h_runs, h_passed = sum(c.runs for c in high), sum(c.passed for c in high)
    l_runs, l_passed = sum(c.runs for c in low), sum(c.passed for c in low)
    return LoadBias(in_flight=bias.in_flight, median_in_flight=median, high_from=threshold,
                    high_runs=h_runs, high_passed=h_passed,
                    low_runs=l_runs, low_passed=l_passed,
                    high_pass_rate=percent(h_passed, h_runs) if h_runs else None,
                    low_pass_rate=percent(l_passed, l_runs) if l_runs else None)


def flag_load_bias(stats: Sequence[CaseStats], alpha: float = DEFAULT_ALPHA) -> LoadBiasSummary | None:
    """Split every case's runs at the sweep's median ``in_flight``, test and flag them (each case's
    ``load_bias`` is replaced); the sweep's summary, None when no run started above the median."""
    known = [s for s in stats if s.load_bias is not None]
    biases = [s.load_bias for s in known if s.load_bias is not None]
    median = sweep_median(biases)
    values = {c.in_flight for b in biases for c in b.in_flight if c.runs}
    threshold = None if median is None else high_from(values, median)
    if median is None or threshold is None:
        return None  # no run knew its load, or every run started at the same load: nothing to compare
    for case in known:
        assert case.load_bias is not None
        case.load_bias = split(case.load_bias, median, threshold)
    tested = [s.load_bias for s in known if s.load_bias is not None and s.load_bias.high_runs and s.load_bias.low_runs]
    p_values = [fisher_p(b.high_passed, b.high_runs, b.low_passed, b.low_runs) for b in tested]
    for bias, q in zip(tested, bh_q_values(p_values), strict=True):
        bias.q = round(q, 6)
        bias.flagged = q <= alpha
    flagged = [s for s in known if s.load_bias is not None and s.load_bias.flagged]
    return LoadBiasSummary(median_in_flight=median, high_from=threshold, max_in_flight=max(values),
                           cases=len(tested), flagged=[s.id for s in flagged],
                           line=_line(threshold, max(values), len(tested), flagged))


def _line(threshold: int, highest: int, tested: int, flagged: Sequence[CaseStats]) -> str:
    line = f"load bias: runs started with {threshold}–{highest} in flight vs fewer"
    if not flagged:
        return f"{line}; none of {plural(tested, 'case')} passes at a different rate under load"
    shown = ", ".join(f"{s.id} ({s.load_bias.high_pass_rate}% vs {s.load_bias.low_pass_rate}%, "
                      f"q={s.load_bias.q})" for s in flagged[:MAX_SHOWN] if s.load_bias is not None)
    more = f" and {len(flagged) - MAX_SHOWN} more" if len(flagged) > MAX_SHOWN else ""
    verb = "passes" if len(flagged) == 1 else "pass"
    return f"{line}; {len(flagged)} of {plural(tested, 'case')} {verb} at a different rate under load: {shown}{more}"


__all__ = ["InFlightTally", "flag_load_bias", "high_from", "split", "sweep_median"]
