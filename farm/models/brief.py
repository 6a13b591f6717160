"""A case's statistics in brief: the few figures read of every case of a big sweep's report (its
HTML charts, ``farm view``'s results table), without the rest of ``CaseStats`` (issue 45: a
30,000-case sweep's page is served from these, each case read whole only when a page shows it).
"""

from __future__ import annotations

from typing import NamedTuple

from farm.models.stats import CaseStats

__all__ = ["CaseBrief"]


class CaseBrief(NamedTuple):
    """The ``CaseStats`` fields of the same names (a tuple: 30,000 of them are made in a blink)."""

    id: str
    suite: str
    source: str
    label: str
    case_passed: bool
    pass_rate: float
    runs: int
    skipped: int
    consistency: float
    avg_duration_ms: float
    min_duration_ms: float
    max_duration_ms: float
    std_deviation_ms: float

    @classmethod
    def of(cls, case: CaseStats) -> CaseBrief:
        return cls._make(getattr(case, name) for name in cls._fields)
