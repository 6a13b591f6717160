"""A sweep's full report as ``farm view`` serves it: the page with one page of its results, the
rest of the table on request (``farm.view.table``), the whole JSON for the page's export button.

A report is rebuilt from its run journal once and kept (``PagedSweeps``): replaying a 30,000-case
journal takes tens of seconds, each page of its table a few milliseconds.
"""

from __future__ import annotations

import io
import multiprocessing
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from farm.models import CaseStats, SweepReport
from farm.models.brief import CaseBrief
from farm.sweep.kept import KeptSweep
from farm.view.table import DEFAULT_SIZE, CaseTable

__all__ = ["KEPT", "PagedSweep", "PagedSweeps", "built_apart", "paged_kept", "paged_sweep"]

KEPT = 2
"""Sweeps kept at once (the newest asked for): each holds its cases' JSON."""
_CHUNK = 500
"""Cases a write of the exported JSON carries."""


@dataclass(frozen=True)
class PagedSweep:
    """The page (``html``), its table, and the report's JSON around its results (for the export)."""

    html: str
    table: CaseTable
    json_head: str
    json_tail: str

    def json_chunks(self) -> Iterator[str]:
        """The whole report's JSON (the text the standalone page's export button downloads), in pieces."""
        yield self.json_head
        texts = self.table.texts()
        for at in range(0, len(texts), _CHUNK):
            yield ("," if at else "") + ",".join(texts[at:at + _CHUNK])
        yield self.json_tail


def paged_sweep(report: SweepReport, sweep_id: str) -> PagedSweep:
    """The page of ``report`` for the sweep ``sweep_id``'s URL: its first page of results embedded,
    the table's address for the others."""
    return _paged(report, sweep_id, CaseTable(report.results), report.results[:DEFAULT_SIZE], report.results)


def paged_kept(kept: KeptSweep, sweep_id: str) -> PagedSweep:
    """The same page from a finished sweep's index: its cases in brief, each read whole (with its
    runs, from the journal) only when a page shows it."""
    first = list(kept.cases(range(min(DEFAULT_SIZE, len(kept.briefs)))))
    return _paged(kept.report, sweep_id, CaseTable(kept.briefs, kept.cases), first, kept.briefs)


def _paged(report: SweepReport, sweep_id: str, table: CaseTable, first: list[CaseStats],
           charted: Sequence[CaseStats | CaseBrief]) -> PagedSweep:
    from farm.reports.html import report_json_parts, write_html

    api = f"/api/sweeps/{quote(sweep_id, safe='')}"
    out = io.StringIO()
    write_html(report, out, rows=first, charted=charted,
               paging={"cases": f"{api}/cases", "report": f"{api}/report.json", "size": DEFAULT_SIZE,
                       "total": len(table), "counts": table.counts})
    head, tail = report_json_parts(report)
    return PagedSweep(out.getvalue(), table, head, tail)


def built_apart(build: Callable[[Path, str], PagedSweep | None], path: Path, sweep_id: str) -> PagedSweep | None:
    """``build(path, sweep_id)`` in a child process: a 30,000-case replay peaks near 1 GB, which the
    server would keep for its life (freed, never given back); what comes back is the page and the
    cases' text."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(build, path, sweep_id).result()


class PagedSweeps:
    """The last ``KEPT`` pages built, by journal file and its size and time: a journal still being
    written is read again. Two requests for one journal build it once (the other waits)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, int, int], PagedSweep | None] = OrderedDict()
        self._locks: dict[tuple[str, int, int], threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, path: Path, build: Callable[[], PagedSweep | None]) -> PagedSweep | None:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._guard:
                if key in self._kept:
                    self._kept.move_to_end(key)
                    return self._kept[key]
            built = build()
            with self._guard:
                self._kept[key] = built
                while len(self._kept) > KEPT:
                    self._locks.pop(self._kept.popitem(last=False)[0], None)
            return built

