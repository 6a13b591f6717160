"""The history's evidence for entering and leaving quarantine (``farm quarantine suggest|review``).

A case's evidence over a window of recorded sweeps is its runs pooled: passes over scored runs,
with the 95 % Wilson interval, against its pass requirement (its newest ``required_passes`` over
its scored runs). *Suggested*: flaky (``farm history``'s trouble label) in at least one sweep of
the window, some runs passing, and the pooled interval straddling the requirement (reaching below
it; at a 100 % requirement no interval with a failure reaches it, so any flaky case qualifies).
*Recovered*: the pooled interval clears the requirement (its lower bound at or above it, or every
run passed at a 100 % requirement).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Engine, select

from farm.history.sweep_info import SweepInfo
from farm.history.tables import case_results
from farm.history.trends import case_points
from farm.quarantine.entries import Entry, EntryIndex
from farm.stats.measures import wilson_interval


@dataclass(frozen=True)
class CaseEvidence:
    """A case's runs pooled over the window."""

    case_id: str
    sweeps: int
    runs: int
    passed: int
    flaky_sweeps: int
    ci_low: float
    ci_high: float
    """The pooled 95 % Wilson interval, percent."""
    requirement: float
    """The pass rate the case needs, percent (from its newest sweep)."""

    @property
    def pass_rate(self) -> float:
        return round(100 * self.passed / self.runs, 1) if self.runs else 0.0

    @property
    def straddles(self) -> bool:
        return self.ci_low < self.requirement and (self.ci_high >= self.requirement or self.requirement >= 100)

    @property
    def recovered(self) -> bool:
        return self.runs > 0 and (self.ci_low >= self.requirement or
                                  (self.requirement >= 100 and self.passed == self.runs))

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "pass_rate": self.pass_rate}


def _requirements(engine: Engine, window: Sequence[SweepInfo]) -> dict[str, float]:
    """Each case's requirement in percent, from the newest sweep of ``window`` that ran it."""
    order = {info.pk: i for i, info in enumerate(window)}
    query = select(case_results.c.case_id, case_results.c.sweep, case_results.c.required_passes,
                   case_results.c.runs, case_results.c.skipped).where(case_results.c.sweep.in_(list(order)))
    newest: dict[str, tuple[int, float]] = {}
    with engine.connect() as conn:
        for row in conn.execute(query):
            scored = row.runs - row.skipped
            if scored > 0 and order[row.sweep] >= newest.get(row.case_id, (-1, 0.0))[0]:
                newest[row.case_id] = (order[row.sweep], 100 * min(row.required_passes, scored) / scored)
    return {case_id: rate for case_id, (_, rate) in newest.items()}


def gather(engine: Engine, window: Sequence[SweepInfo]) -> dict[str, CaseEvidence]:
    """Every case of ``window`` (oldest first), its runs pooled."""
    needs = _requirements(engine, window)
    found = {}
    for case_id, points in case_points(engine, window).items():
        ran = [p for p in points if p is not None and p.label != "skipped"]
        runs = sum(p.runs - p.skipped for p in ran)
        passed = sum(p.passed for p in ran)
        low, high = wilson_interval(passed, runs)
        found[case_id] = CaseEvidence(case_id, len(ran), runs, passed, sum(p.label == "flaky" for p in ran),
                                      round(low * 100, 1), round(high * 100, 1), round(needs.get(case_id, 100.0), 1))
    return found


def every_case_quarantined(index: EntryIndex, evidence: dict[str, CaseEvidence], today: dt.date) -> bool:
    """An entry in force quarantines every case there is (``case = "*"``), or every recorded case
    of the window: then no case of the suite gates a sweep."""
    def held(entry: Entry) -> bool:
        return not entry.expired(today)

    if any(held(e) and e.matches_every_case() for e in index.entries):
        return True
    return bool(evidence) and all(any(held(e) for e in index.matching(cid)) for cid in evidence)


def suggest(evidence: dict[str, CaseEvidence]) -> list[CaseEvidence]:
    """Cases to quarantine: flaky in the window, some runs passing, the interval straddling the need."""
    return [e for e in evidence.values() if e.flaky_sweeps and e.passed > 0 and e.straddles]


@dataclass(frozen=True)
class Review:
    """One entry's standing: what the evidence says about it."""

    entry: Entry
    findings: list[str]
    cases: list[CaseEvidence]

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry.describe(), "findings": self.findings, "cases": [c.to_json() for c in self.cases]}


def review(index: EntryIndex, evidence: dict[str, CaseEvidence], today: dt.date) -> list[Review]:
    """Entries that can go: expired, naming no recorded case, or every case they name recovered."""
    named: dict[Entry, list[CaseEvidence]] = {}  # each case looked up once, not once per entry
    for cid, case in evidence.items():
        for entry in index.matching(cid):
            named.setdefault(entry, []).append(case)
    found = []
    for entry in index.entries:
        cases = named.get(entry, [])
        findings = []
        if entry.expired(today):
            findings.append("expired")
        if not cases:
            findings.append("names no case")
        elif all(c.recovered for c in cases):
            findings.append("recovered")
        if findings:
            found.append(Review(entry, findings, cases))
    return found
