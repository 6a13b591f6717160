"""A case's statistics in brief: the few figures read of every case of a big sweep's report (its
HTML charts, ``farm view``'s results table), without the rest of ``CaseStats`` (issue 45: a
30,000-case sweep's page is served from these, each case read whole only when a page shows it).
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields

from farm.models.stats import CaseStats

__all__ = ["BRIEF_FIELDS", "CaseBrief"]


@dataclass(frozen=True, slots=True)
class CaseBrief:
    """The ``CaseStats`` fields of the same names."""

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
        return cls(*(getattr(case, name) for name in BRIEF_FIELDS))

    def values(self) -> tuple[object, ...]:
        """Its fields' values in ``BRIEF_FIELDS`` order (``CaseBrief(*values)`` makes it again)."""
        return astuple(self)


BRIEF_FIELDS = tuple(f.name for f in fields(CaseBrief))
