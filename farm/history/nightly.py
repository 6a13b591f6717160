"""The nightly loop: record the nightly sweep, compare it, keep the comparisons, tell the team.

The beat scheduler's ``farm.nightly`` submits ``farm test … --detach --tag trigger=nightly``; the
worker that runs the sweep's ``farm.report`` (with its own ``FARM_HISTORY_URL``) then calls
``run_nightly``, which

1. records the sweep (once, however often ``farm.report`` is delivered);
2. compares it with the previous nightly and with the blessed baseline (``FARM_NIGHTLY_BASELINE``,
   default ``nightly``) and keeps each comparison once;
3. writes the sweep's HTML report, with the comparison in it, to ``FARM_REPORT_DIR`` when set;
4. POSTs one JSON summary to ``FARM_NOTIFY_URL`` (Slack-compatible: its ``text`` is one line
   saying whether the nightly regressed and where its report is: a URL under
   ``FARM_REPORT_BASE_URL``, else the file in ``FARM_REPORT_DIR``, else the ``farm report`` command).

The notification goes out only from the call that stored the comparisons (or, for the first
nightly, recorded the sweep), so a redelivered report task does not notify twice.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from farm.defaults import DEFAULT_ALPHA, DEFAULT_MIN_DROP
from farm.errors import FarmRuntimeError
from farm.history.facts import NIGHTLY_TAG
from farm.history.store import HistoryStore
from farm.history.sweep_info import SweepInfo
from farm.models import SweepReport
from farm.models.quarantine import quarantined_ids
from farm.stats.compare import Comparison, compare

log = logging.getLogger("farm.history")

DEFAULT_BASELINE = "nightly"
LAST_NIGHTLY = "last-nightly"
NOTIFY_TIMEOUT_S = 10.0
REPORT_COMMAND = "farm report {sweep_id}"
LISTED_REGRESSIONS = 20
"""Regressed case ids listed per comparison in the webhook's JSON."""


@dataclass(frozen=True)
class NightlySettings:
    """Where the nightly loop reports, from the worker's environment."""

    baseline: str = DEFAULT_BASELINE
    notify_url: str | None = None
    report_base_url: str | None = None
    report_dir: str | None = None
    alpha: float = DEFAULT_ALPHA
    min_drop: float = DEFAULT_MIN_DROP

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> NightlySettings:
        return cls(baseline=env.get("FARM_NIGHTLY_BASELINE") or DEFAULT_BASELINE,
                   notify_url=env.get("FARM_NOTIFY_URL") or None,
                   report_base_url=env.get("FARM_REPORT_BASE_URL") or None,
                   report_dir=env.get("FARM_REPORT_DIR") or None)


@dataclass
class NightlyOutcome:
    """What one pass of the loop did."""

    sweep: SweepInfo
    comparisons: dict[str, tuple[SweepInfo, Comparison]] = field(default_factory=dict)
    text: str = ""
    notified: bool = False
    held: set[str] = field(default_factory=set)
    """Quarantined cases (``farm-quarantine.toml``): their regressions do not make the nightly regress."""

    @property
    def regressed(self) -> bool:
        return any(row.verdict == "regressed" and row.id not in self.held
                   for _, c in self.comparisons.values() for row in c.cases)


def is_nightly(report: SweepReport) -> bool:
    return report.envelope.tags.get(NIGHTLY_TAG[0]) == NIGHTLY_TAG[1]


def report_location(sweep_id: str, settings: NightlySettings) -> str:
    if settings.report_base_url:
        return f"{settings.report_base_url.rstrip('/')}/{urllib.parse.quote(sweep_id)}.html"
    if settings.report_dir:
        return str(Path(settings.report_dir) / f"{sweep_id}.html")
    return REPORT_COMMAND.format(sweep_id=sweep_id)


def _against(kind: str, base: SweepInfo, comparison: Comparison) -> str:
    what = "the last nightly" if kind == LAST_NIGHTLY else f"baseline {kind.split(':', 1)[1]}"
    counts = ", ".join(f"{n} {v}" for v, n in comparison.summary.items() if n) or "no cases"
    return f"vs {what} {base.sweep_id}: {counts}"


def summary_line(outcome: NightlyOutcome, location: str) -> str:
    """One line: regressed or not, against what, and where the report is."""
    head = f"agent-farm nightly {outcome.sweep.sweep_id}"
    if not outcome.comparisons:
        verdict = "recorded; nothing to compare with yet (no earlier nightly, no baseline)"
    else:
        word = "REGRESSED" if outcome.regressed else "no regression"
        verdict = f"{word} ({'; '.join(_against(k, b, c) for k, (b, c) in outcome.comparisons.items())})"
    return f"{head}: {verdict}. Report: {location}"


def payload(outcome: NightlyOutcome, location: str) -> dict[str, Any]:
    """The webhook's JSON body: Slack reads ``text``; the rest is for other receivers."""
    return {
        "text": outcome.text, "sweep_id": outcome.sweep.sweep_id, "regressed": outcome.regressed,
        "report": location,
        "comparisons": {kind: {"base": base.sweep_id, "summary": c.summary, "regressed_cases": _regressed(c)}
                        for kind, (base, c) in outcome.comparisons.items()},
    }


def _regressed(comparison: Comparison) -> list[str]:
    return [row.id for row in comparison.cases if row.verdict == "regressed"][:LISTED_REGRESSIONS]


def post_json(url: str, body: dict[str, Any]) -> None:
    """POST ``body`` as JSON; raises on a network error or a non-2xx answer."""
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=NOTIFY_TIMEOUT_S) as answer:
        answer.read()


def _compare_all(store: HistoryStore, head: SweepInfo, settings: NightlySettings
                 ) -> tuple[dict[str, tuple[SweepInfo, Comparison]], bool]:
    """Comparisons with the last nightly and the baseline; True when this call stored one first."""
    bases = {LAST_NIGHTLY: store.latest(tag=NIGHTLY_TAG, before=head),
             f"baseline:{settings.baseline}": store.baseline(settings.baseline)}
    found: dict[str, tuple[SweepInfo, Comparison]] = {}
    fresh = False
    head_snapshot = store.snapshot(head)
    for kind, base in bases.items():
        if base is None or base.pk == head.pk:
            continue
        comparison = compare(store.snapshot(base), head_snapshot, alpha=settings.alpha, min_drop=settings.min_drop)
        fresh = store.store_comparison(base.pk, head.pk, kind, comparison) or fresh
        found[kind] = (base, comparison)
    return found, fresh


def _write_report(report: SweepReport, outcome: NightlyOutcome, settings: NightlySettings) -> None:
    if not settings.report_dir:
        return
    from farm.reports.html import render_html

    attached = next(iter(outcome.comparisons.values()), None)
    if attached is not None:
        report = report.model_copy(update={"envelope": report.envelope.updated(
            compared_with=attached[1].model_dump(mode="json"))})
    path = Path(settings.report_dir) / f"{outcome.sweep.sweep_id}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report), encoding="utf-8")


def run_nightly(store: HistoryStore, report: SweepReport, settings: NightlySettings,
                post: Callable[[str, dict[str, Any]], None] = post_json) -> NightlyOutcome:
    """Record, compare, keep, write the report, notify (once): the nightly loop for one sweep."""
    recorded = store.record(report)
    head = store.sweep(str(report.envelope.sweep_id))
    if head is None:  # cannot happen: it was just recorded
        raise FarmRuntimeError(f"nightly {report.envelope.sweep_id}: recorded but not found")
    comparisons, fresh = _compare_all(store, head, settings)
    location = report_location(head.sweep_id, settings)
    outcome = NightlyOutcome(head, dict(sorted(comparisons.items(), key=lambda kv: kv[0] != LAST_NIGHTLY)),
                             held=quarantined_ids(report.results))
    outcome.text = summary_line(outcome, location)
    _write_report(report, outcome, settings)
    if settings.notify_url and (fresh or (not comparisons and recorded.created)):
        try:
            post(settings.notify_url, payload(outcome, location))
            outcome.notified = True
        except Exception as exc:  # a webhook that is down must not fail the report task
            host = urllib.parse.urlsplit(settings.notify_url).hostname  # never the URL: it may hold a token
            log.error("nightly %s: notifying %s failed: %s", head.sweep_id, host, type(exc).__name__)
    log.info("%s", outcome.text)
    return outcome
