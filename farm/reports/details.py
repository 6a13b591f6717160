"""Run details supplied per case while a report is written, instead of held in the report.

A sweep of 1,000 cases × 100 runs keeps 100 run details per case for the JSON, HTML, Markdown
and JUnit reports: held in the ``SweepReport`` until it is written, they made memory grow with
runs (issue 16). A sweep that has them on disk elsewhere (the in-process executor's run
journal, ``farm.sweep.journal``) leaves ``CaseStats.run_details`` empty and attaches a
``RunDetailsSource`` to the report: the renderers ask it for one case's details at a time, write
that case, and let them go. Renderers stay pure: they take a callable, not a journal.

The source is attached beside the report (keyed by the object, dropped with it) rather than
in it, so the report's fields, its JSON and every other reader stay as they are. A copy of the
report (``model_copy``) finds it by its sweep id while the original or the journal lives; a case
that has run details of its own keeps them.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator

from farm.models import CaseStats, RunDetail, SweepReport

RunDetailsSource = Callable[[CaseStats], list[RunDetail]]
"""A case's kept run details (what ``CaseStats.run_details`` would hold), given its statistics."""

_SOURCES: dict[int, RunDetailsSource] = {}
_BY_SWEEP: weakref.WeakValueDictionary[str, RunDetailsSource] = weakref.WeakValueDictionary()


def attach_details(report: SweepReport, source: RunDetailsSource) -> None:
    """Render ``report``'s run details from ``source`` (for as long as the report lives)."""
    key = id(report)
    _SOURCES[key] = source
    weakref.finalize(report, _SOURCES.pop, key, None)
    if (sweep_id := report.envelope.sweep_id) is not None:
        _BY_SWEEP[sweep_id] = source


def details_source(report: SweepReport) -> RunDetailsSource | None:
    """The source attached to ``report`` (or to the report it was copied from); None: its run
    details are in its results."""
    source = _SOURCES.get(id(report))
    sweep_id = report.envelope.sweep_id
    if source is None and sweep_id is not None:
        source = _BY_SWEEP.get(sweep_id)
    return source


def with_details(results: Iterable[CaseStats], source: RunDetailsSource | None) -> Iterator[CaseStats]:
    """Each case's statistics with its run details in, one case at a time (a case that has some
    keeps its own)."""
    for stats in results:
        if source is None or stats.run_details:
            yield stats
        else:
            yield stats.model_copy(update={"run_details": source(stats)})


def with_all_details(report: SweepReport) -> SweepReport:
    """``report`` with every case's run details in (for a reader that needs it whole: a reporter
    agent gets the report in one message)."""
    source = details_source(report)
    if source is None:
        return report
    return report.model_copy(update={"results": list(with_details(report.results, source))})


__all__ = ["RunDetailsSource", "attach_details", "details_source", "with_all_details", "with_details"]
