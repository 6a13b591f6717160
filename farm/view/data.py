"""What ``farm view`` shows, read through the history store and the distributed store's own
functions (never a table or a Redis key of its own): each call opens what it needs and closes it.

Every function is blocking (SQLAlchemy, redis-py): the web handlers call them in a thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any, TypeVar

from farm.errors import FarmError, InputError
from farm.history.store import HistoryStore
from farm.history.sweep_info import SweepInfo
from farm.view.paged import PagedSweep, PagedSweeps, built_apart

__all__ = ["SweepFilter", "ViewData"]

T = TypeVar("T")
LIST_LIMIT = 500
"""Sweeps the list shows at most: the newest of those the tag, agent, status and date filters keep."""


@dataclass(frozen=True)
class SweepFilter:
    """The sweeps list's filters, from the query string (each optional)."""

    tag: str = ""
    agent: str = ""
    status: str = ""
    since: str = ""
    until: str = ""

    def tag_pair(self) -> tuple[str, str] | None:
        if not self.tag:
            return None
        key, sep, value = self.tag.partition("=")
        if not sep or not key:
            raise InputError(f"tag {self.tag!r}: write KEY=VALUE")
        return key, value

    def _day(self, text: str, name: str) -> date | None:
        try:
            return date.fromisoformat(text) if text else None
        except ValueError:
            raise InputError(f"{name} {text!r}: write a date as YYYY-MM-DD") from None

    def read(self, store: HistoryStore) -> list[SweepInfo]:
        """The newest ``LIST_LIMIT`` recorded sweeps that match, filtered by the database: the days
        are UTC days, as the list shows the start times."""
        since, until = self._day(self.since, "since"), self._day(self.until, "until")
        return store.sweeps(last=LIST_LIMIT, tag=self.tag_pair(), agent=self.agent, status=self.status,
                            since=None if since is None else datetime.combine(since, time()),
                            before=None if until in (None, date.max) else
                            datetime.combine(until + timedelta(days=1), time()))


@dataclass(frozen=True)
class SweepPage:
    """A sweep's page: its full report when the journal is on disk, else the figures history holds."""

    info: SweepInfo
    report_html: str | None
    cases: list[dict[str, Any]]


class ViewData:
    """The history at ``history_url`` and, when a broker is given, the sweeps in flight on it."""

    def __init__(self, history_url: str, broker: str | None = None,
                 tell: Callable[[str], None] | None = None) -> None:
        self.history_url = history_url
        self.broker = broker
        self.tell = tell
        """Where a warning of the history's inbox goes (every read records the sweeps waiting there)."""
        self.pages = PagedSweeps()

    def _with_store(self, read: Callable[[HistoryStore], T]) -> T:
        store = HistoryStore.open(self.history_url, tell=self.tell)
        try:
            return read(store)
        finally:
            store.close()

    def sweeps(self, chosen: SweepFilter) -> list[SweepInfo]:
        return self._with_store(chosen.read)

    def sweep(self, sweep_id: str, *, figures: bool = False) -> SweepPage | None:
        """The sweep's full report (its journal on disk), else (or with ``figures``) the history's
        figures of its cases."""
        def read(store: HistoryStore) -> SweepPage | None:
            from farm.history.trends import case_points

            info = store.sweep(sweep_id)
            if info is None:
                return None
            paged = None if figures else self._paged(info)
            if paged is not None:
                return SweepPage(info, paged.html, [])
            points = case_points(store.engine, [info])
            cases = [{"id": case_id, **vars(p[0])} for case_id, p in points.items() if p and p[0] is not None]
            return SweepPage(info, None, cases)

        return self._with_store(read)

    def paged(self, sweep_id: str) -> PagedSweep | None:
        """The sweep's paged report (its table, its JSON), while its journal is on disk."""
        info = self._with_store(lambda store: store.sweep(sweep_id))
        return None if info is None else self._paged(info)

    def _paged(self, info: SweepInfo) -> PagedSweep | None:
        path = _own_journal(info)
        if path is None:
            return None
        try:
            return self.pages.get(path, lambda: _paged_kept(path, info.sweep_id)
                                  or built_apart(_paged_from, path, info.sweep_id))
        except OSError:
            return None  # pruned meanwhile: the history's figures instead

    def compare_html(self, base: str, head: str) -> str:
        """The comparison page of two recorded sweeps (ids, prefixes, ``last``, baselines). Never a
        JSON report path, as ``farm compare`` takes: a URL parameter must not read a file here."""
        from farm.history.refs import RefResolver
        from farm.reports.history_html import render_comparison_html
        from farm.stats.compare import SweepSnapshot, compare

        def read(store: HistoryStore) -> list[SweepSnapshot]:
            resolver = RefResolver(lambda: store)  # closed by _with_store, not by the resolver
            sides = []
            for ref, role in ((base, "base"), (head, "head")):
                info = resolver.find(ref)
                if info is None:
                    raise InputError(f"{role} {ref!r}: no recorded sweep or baseline by that name")
                sides.append(store.snapshot(info))
            return sides

        base_side, head_side = self._with_store(read)
        return render_comparison_html(compare(base_side, head_side))

    def trend_html(self, case_id: str, last: int = 90) -> str | None:
        """The trend page of one case over the last sweeps; None when no recorded sweep ran it."""
        from farm.history.trends import case_points, trend_document
        from farm.reports.history_html import render_trend_html

        def read(store: HistoryStore) -> tuple[list[SweepInfo], dict[str, Any]]:
            window = list(reversed(store.sweeps(last=last)))
            return window, case_points(store.engine, window, case_id) if window else {}

        window, trends = self._with_store(read)
        return render_trend_html(trend_document(window, trends)) if trends else None

    def in_flight(self) -> list[dict[str, Any]]:
        """The distributed sweeps in flight on the broker's store, with their progress ([] without a broker)."""
        if not self.broker:
            return []
        from farm.distributed.store.sweep_store import SweepStore
        from farm.settings import FarmSettings

        store = SweepStore.from_url(FarmSettings.from_env().replace(broker_url=self.broker).store_url)
        try:
            sweeps = store.in_flight()
        finally:
            store.client.close()
        return [{**vars(s), "submitted": datetime.fromtimestamp(s.submitted_epoch).isoformat(timespec="seconds")}
                for s in sweeps]


def _own_journal(info: SweepInfo) -> Path | None:
    """The sweep's run journal, if the file is still there.

    Only the path the history recorded, and only when it is this sweep's own farm journal
    (``…/journals/<sweep id>.jsonl``, a regular file whose plan names the sweep): a history row
    written by anyone else cannot make the view read, or show, another file. A matrix's arm
    (``MATRIX:ARM``, SPEC 22) shows the matrix's own journal: the whole matrix as one page."""
    from farm.matrix.split import arm_sweep_id
    from farm.sweep.journal import JOURNAL_DIR, JOURNAL_SUFFIX

    matrix = info.tags.get("matrix", "")
    own = matrix if matrix and info.sweep_id == arm_sweep_id(matrix, info.tags.get("arm", "")) else info.sweep_id
    path = Path(info.journal or "")
    if (path.name != f"{own}{JOURNAL_SUFFIX}" or path.parent.name != JOURNAL_DIR or path.is_symlink()
            or not path.is_file()):
        return None
    return path


def _paged_kept(path: Path, sweep_id: str) -> PagedSweep | None:
    """The report of a finished sweep from the index kept beside its journal (``farm.sweep.kept``),
    paged without a replay; None when there is no index, or not this journal's as it is now."""
    from farm.sweep.journal import JOURNAL_SUFFIX
    from farm.sweep.kept import read_index
    from farm.view.paged import paged_kept

    kept = read_index(path, path.name.removesuffix(JOURNAL_SUFFIX))  # _own_journal checked the name
    return None if kept is None else paged_kept(kept, sweep_id)


def _paged_from(path: Path, sweep_id: str) -> PagedSweep | None:
    """The full report rebuilt from the journal, paged (None when the journal's plan is another sweep's)."""
    from farm.sweep.journal import JOURNAL_SUFFIX
    from farm.sweep.replay import report_from_journal
    from farm.view.paged import paged_sweep

    try:
        report = report_from_journal(path)
    except FarmError:
        return None  # pruned while read, or not a journal any more: the history's figures instead
    own = path.name.removesuffix(JOURNAL_SUFFIX)  # _own_journal checked the name
    return paged_sweep(report, sweep_id) if report.envelope.sweep_id == own else None
