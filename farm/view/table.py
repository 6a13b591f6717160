"""A sweep's results table, paged on the server: ``farm view``'s page of a big sweep embeds one page
of its cases, and the page's script asks ``/api/sweeps/ID/cases`` for the others.

The filters, the search and the sort are the ones the report's own script applies to an embedded
table (``farm/reports/templates/report.js``): the same chips, the same text searched (id, suite,
source, label, each kept run's output and error, any case), the same sort keys, ties in report
order. Each case is kept as its JSON text (what the page embeds), not as a model: a 30,000-case
sweep's table is its text plus a few numbers a case.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from farm.errors import InputError
from farm.models import CaseStats
from farm.models.brief import CaseBrief

__all__ = ["DEFAULT_SIZE", "FILTERS", "PAGE_SIZES", "SORTS", "CaseTable", "TableQuery"]

PAGE_SIZES = (50, 100, 250, 500)
"""The page sizes the report's pager offers."""
DEFAULT_SIZE = 100
_VERDICT_ORDER = {"fail": 0, "pass": 1, "skipped": 2}
_LABEL_ORDER = {"broken": 0, "flaky": 1, "stable": 2, "skipped": 3}


@dataclass(slots=True)
class _Row:
    """What the table filters, searches and sorts a case by, and its JSON (empty, with the haystack,
    until a case read when needed is read: ``CaseTable``'s ``whole``)."""

    index: int
    verdict: str
    label: str
    id: str
    suite: str
    pass_rate: float
    runs: int
    consistency: float
    avg_duration_ms: float
    haystack: str
    json: str


FILTERS: dict[str, Callable[[_Row], bool]] = {
    "all": lambda r: True,
    "failed": lambda r: r.verdict == "fail",
    "passed": lambda r: r.verdict == "pass",
    "flaky": lambda r: r.label == "flaky",
    "broken": lambda r: r.label == "broken",
    "stable": lambda r: r.label == "stable",
}
"""The report's chips, by the name the query's ``filter`` gives."""
_DIGITS = re.compile(r"(\d+)")


def _natural(text: str) -> tuple[tuple[int, int, str], ...]:
    """A key that orders text as the report's collator does: numbers by value, letters in any case."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part.casefold())
                 for part in _DIGITS.split(text) if part)


SORTS: dict[str, Callable[[_Row], Any]] = {
    "verdict": lambda r: _VERDICT_ORDER[r.verdict],
    "id": lambda r: _natural(r.id),
    "suite": lambda r: _natural(r.suite),
    "label": lambda r: _LABEL_ORDER.get(r.label, 9),
    "pass_rate": lambda r: r.pass_rate,
    "runs": lambda r: r.runs,
    "consistency": lambda r: r.consistency,
    "avg_duration_ms": lambda r: r.avg_duration_ms,
}
"""The report's sortable columns, by their ``data-key``."""


@dataclass(frozen=True)
class TableQuery:
    """One page of the table: ``page`` from 1, ``size`` one of ``PAGE_SIZES``, ``q`` the search
    text (any case), ``filter`` a chip, ``sort`` a column (empty: report order), ``order``."""

    page: int = 1
    size: int = DEFAULT_SIZE
    q: str = ""
    filter: str = "all"
    sort: str = ""
    order: str = "asc"

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> TableQuery:
        """From a URL's query; InputError (a 400) on a value the page never sends."""
        try:
            page, size = int(query.get("page", "1")), int(query.get("size", str(DEFAULT_SIZE)))
        except ValueError:
            raise InputError("page and size are whole numbers") from None
        chosen = cls(page=page, size=size, q=query.get("q", "").strip().lower(), filter=query.get("filter", "all"),
                     sort=query.get("sort", ""), order=query.get("order", "asc"))
        if page < 1 or size not in PAGE_SIZES:
            raise InputError(f"page counts from 1; size is one of {', '.join(map(str, PAGE_SIZES))}")
        if chosen.filter not in FILTERS or (chosen.sort and chosen.sort not in SORTS) or chosen.order not in (
                "asc", "desc"):
            raise InputError(f"filter is one of {', '.join(FILTERS)}; sort one of {', '.join(SORTS)}; "
                             "order asc or desc")
        return chosen


def _show(value: Any) -> str:
    """A run's output as the report's script shows (and searches) it."""
    if isinstance(value, str):
        return value
    flat = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return flat if len(flat) <= 100 else json.dumps(value, ensure_ascii=False, indent=2)


def _verdict(case: CaseStats | CaseBrief) -> str:
    return "skipped" if case.label == "skipped" else "pass" if case.case_passed else "fail"


def _haystack(case: CaseStats) -> str:
    parts = [case.id, case.suite or "", case.source or "", str(case.label)]
    for run in case.run_details:
        parts += [_show(run.output), run.error or ""]
    return "\n".join(parts).lower()


def _row(index: int, case: CaseStats | CaseBrief) -> _Row:
    """A brief's row has no JSON nor haystack until its case is read whole."""
    whole = case if isinstance(case, CaseStats) else None
    # by position: a 30,000-case table makes 30,000 rows before its first page is served
    return _Row(index, _verdict(case), str(case.label), case.id, case.suite or "", case.pass_rate, case.runs,
                case.consistency, case.avg_duration_ms, "" if whole is None else _haystack(whole),
                "" if whole is None else whole.model_dump_json())


class CaseTable:
    """A report's results, in report order, ready to be paged: each case whole, or in brief (the
    fields the table sorts and filters by), read whole from ``whole(indexes)`` when a page shows it
    (every case at the first search)."""

    def __init__(self, cases: Sequence[CaseStats | CaseBrief],
                 whole: Callable[[list[int]], Iterable[CaseStats]] | None = None) -> None:
        self._rows = [_row(i, case) for i, case in enumerate(cases)]
        self._whole = whole
        self._filling = threading.Lock()
        kinds = Counter((r.verdict, r.label) for r in self._rows)  # a chip tests these two alone
        sample = {(r.verdict, r.label): r for r in self._rows}
        self.counts = {name: sum(n for kind, n in kinds.items() if test(sample[kind]))
                       for name, test in FILTERS.items()}
        """How many cases each chip shows (the chips' figures)."""

    def __getstate__(self) -> dict[str, Any]:  # a replay's table comes back from its child process
        return {**self.__dict__, "_filling": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _filling=threading.Lock())

    def __len__(self) -> int:
        return len(self._rows)

    def _filled(self, rows: list[_Row]) -> list[_Row]:
        """``rows`` with their JSON and haystack (each case read whole once)."""
        if self._whole is not None and any(not r.json for r in rows):
            with self._filling:
                missing = [r for r in rows if not r.json]
                for row, case in zip(missing, self._whole([r.index for r in missing]), strict=True):
                    row.haystack, row.json = _haystack(case), case.model_dump_json()
        return rows

    def texts(self) -> list[str]:
        """Every case's JSON, in report order."""
        return [r.json for r in self._filled(self._rows)]

    def page_json(self, query: TableQuery) -> str:
        """The page as JSON: ``total``, ``matching``, ``page`` (the last there is when asked past
        it), ``pages``, ``size``, ``counts`` and ``cases`` (each as the report's JSON holds it)."""
        test, q = FILTERS[query.filter], query.q
        rows = [r for r in (self._filled(self._rows) if q else self._rows) if test(r) and (not q or q in r.haystack)]
        if query.sort:
            rows.sort(key=SORTS[query.sort], reverse=query.order == "desc")  # stable: ties in report order
        pages = max(1, -(-len(rows) // query.size))
        page = min(query.page, pages)
        shown = self._filled(rows[(page - 1) * query.size:page * query.size])
        head = json.dumps({"total": len(self._rows), "matching": len(rows), "page": page, "pages": pages,
                           "size": query.size, "counts": self.counts})
        return f'{head[:-1]}, "cases": [{",".join(r.json for r in shown)}]}}'
