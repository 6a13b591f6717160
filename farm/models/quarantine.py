"""A report's quarantine marks: mark its quarantined cases, and say which cases still gate (pure: no I/O).

The entries come from ``farm.quarantine`` (the files, the plan); the marks are data of a case's
statistics (``CaseStats.quarantine``), set as a sweep is summarised (``farm.stats.sweep``).

A case's mark is its entry plus ``status``: ``active`` (today is on or before ``until``, UTC) or
``expired``. An active mark keeps the case out of the exit code and of the regression gate; an
expired one gates again.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from farm.models import CaseStats

ACTIVE = "active"
EXPIRED = "expired"
EVERY_CASE = "every case is quarantined: no case gates the sweep (check farm-quarantine.toml's patterns)"


def today_utc() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


def mark_quarantined(stats: Sequence[CaseStats], entries: Any, today: dt.date | None = None) -> None:
    """Set ``quarantine`` on each case ``entries`` (the plan's case id → entry) names."""
    if not isinstance(entries, Mapping) or not entries:
        return
    day = today or today_utc()
    for case in stats:
        entry = entries.get(case.id)
        if isinstance(entry, Mapping):
            expired = dt.date.fromisoformat(str(entry["until"])) < day
            case.quarantine = {**entry, "status": EXPIRED if expired else ACTIVE}


def is_quarantined(case: CaseStats) -> bool:
    """Quarantined and not expired: the case does not gate."""
    return bool(case.quarantine) and case.quarantine.get("status") == ACTIVE  # type: ignore[union-attr]


def quarantined_ids(results: Sequence[CaseStats]) -> set[str]:
    return {c.id for c in results if is_quarantined(c)}


def badge(case: CaseStats) -> str | None:
    """``quarantined (owner: reason, until 2026-12-31)``, ``quarantine expired (…)``, or None."""
    mark = case.quarantine
    if not mark:
        return None
    word = "quarantined" if mark.get("status") == ACTIVE else "quarantine expired"
    reason = f": {mark['reason']}" if mark.get("reason") else ""
    return f"{word} ({mark.get('owner')}{reason}, until {mark.get('until')})"


def quarantine_lines(results: Sequence[CaseStats]) -> list[str]:
    """One terminal line per marked case: ``case x: quarantined (…)`` or ``… quarantine expired (…)``;
    first ``EVERY_CASE`` when no case of the sweep is left to gate it (``case = "*"``)."""
    held = [c for c in results if c.label != "skipped"]
    lines = [EVERY_CASE] if held and all(is_quarantined(c) for c in held) else []
    for case in results:
        text = badge(case)
        if text is not None:
            verdict = "passed" if case.case_passed else "failed"
            lines.append(f"case {case.id} ({verdict}, {case.pass_rate:g}%): {text}")
    return lines

