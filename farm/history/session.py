"""``farm test``'s history: record the sweep, gate on a baseline, order cases by recent failures.

``farm test`` calls a ``HistorySession`` three times: ``start`` once the sweep is prepared (before
any run: a baseline that does not resolve is bad input, exit 2), ``finish`` with the report
(record it, compare it with the baseline and attach the comparison to its metadata, so every
report format shows it), and ``exit_code`` for the process's exit code.

Gating (``--baseline REF``): by default (``--gate regressions``) the exit code is 1 only when a
case regressed significantly against the baseline, because a baseline is how a team accepts
today's known failures and flaky cases: gating on them again would fail every build until each
is fixed. ``--gate verdicts`` also fails on the usual case verdicts. Runtime errors, interrupts
and cancellations keep their own exit codes either way.

Recording never changes the exit code: a history database that cannot be written is a warning,
and the reports are written all the same.

Into a SQLite history, a session that opened no store (no baseline, no judge checks to read, no
``--order failing-first``) leaves the finished report in the file's inbox instead
(``farm.history.inbox``): the next reader of the history records it, and ``farm test`` never
imports SQLAlchemy. A PostgreSQL history is recorded directly: other machines read it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import farm.collector as collector
from farm.defaults import DEFAULT_ALPHA, DEFAULT_MIN_DROP
from farm.errors import ExitCode, FarmError, SettingsError
from farm.history.facts import HistoryFacts, parse_tags, sweep_facts
from farm.history.inbox import deposit, entry_name, inbox_of
from farm.history.location import given_history_url, history_url
from farm.models import ARM_SEPARATOR, SweepReport, SweepStatus
from farm.models.envelope import Recorder
from farm.models.quarantine import quarantined_ids
from farm.plan.sweep_plan import SweepPlan
from farm.stats import DEFAULT_PASS_K, exit_code_for
from farm.stats.compare_terms import check_thresholds

if TYPE_CHECKING:  # SQLAlchemy is imported only when the history is used (not with --no-history)
    from farm.history.refs import Resolved
    from farm.history.store import HistoryStore
    from farm.stats.compare import Comparison  # loaded by a sweep with a baseline
    from farm.suites.stream import CaseStream

Gate = Literal["regressions", "verdicts"]
Order = Literal["file", "failing-first"]

ORDER_LOOKBACK = 20
"""Sweeps ``--order failing-first`` looks back over."""
LISTED = 10
"""Regressed case ids named in ``farm test``'s "compared with" line."""


@dataclass(frozen=True)
class HistoryOptions:
    """The history flags of ``farm test``."""

    url: str | None = None
    enabled: bool = True
    tags: tuple[str, ...] = ()
    """``--tag KEY=VALUE`` as given (checked when the session starts, inside the exit-code mapping)."""
    baseline: str | None = None
    gate: Gate | None = None
    """None: ``regressions`` when a baseline is given."""
    pass_k: tuple[int, ...] = DEFAULT_PASS_K
    order: Order = "file"
    alpha: float = DEFAULT_ALPHA
    min_drop: float = DEFAULT_MIN_DROP

    @classmethod
    def from_flags(cls, flags: dict[str, Any]) -> HistoryOptions:
        """Take (pop) the history flags out of ``farm test``'s flags."""
        ks = tuple(flags.pop("pass_k", ()) or ()) or DEFAULT_PASS_K
        return cls(url=flags.pop("history", None), enabled=not flags.pop("no_history", False),
                   tags=tuple(flags.pop("tags", ()) or ()),
                   baseline=flags.pop("baseline", None), gate=flags.pop("gate", None),
                   pass_k=tuple(sorted(set(ks))), order=flags.pop("order", None) or "file",
                   alpha=flags.pop("alpha", DEFAULT_ALPHA), min_drop=flags.pop("min_drop", DEFAULT_MIN_DROP))


def gate_on_baseline(comparison: Comparison, report: SweepReport, gate: Gate) -> ExitCode:
    """The exit code of a sweep compared with its baseline (see the module docstring)."""
    code = exit_code_for(report)
    if code not in (ExitCode.OK, ExitCode.CASES_FAILED):
        return code
    held = quarantined_ids(report.results)  # a quarantined case's regression does not gate either
    if any(c.verdict == "regressed" and c.id not in held for c in comparison.cases):
        return ExitCode.CASES_FAILED
    return code if gate == "verdicts" else ExitCode.OK


def failing_first(ids: Sequence[str], last_trouble: dict[str, int], arms: Sequence[str] = ()) -> list[int]:
    """The plan order (indexes into ``ids``) that runs the cases that failed or were flaky most
    recently first (``last_trouble``: sweeps ago), then the rest, each group in file order. A
    matrix's copies of a case (``arms``: ids ``T1@ARM``) share its own id's place: they stay side by
    side, as the interleaving takes them (SPEC 22)."""
    suffixes = tuple(f"{ARM_SEPARATOR}{arm}" for arm in arms)

    def own(case_id: str) -> str:
        return case_id.rpartition(ARM_SEPARATOR)[0] if suffixes and case_id.endswith(suffixes) else case_id

    return sorted(range(len(ids)), key=lambda i: (last_trouble.get(own(ids[i]), math.inf), i))


def last_trouble(store: HistoryStore, lookback: int = ORDER_LOOKBACK) -> dict[str, int]:
    """For each recorded case: how many sweeps ago it was last flaky or broken (0 = the newest sweep)."""
    from farm.history.trends import TROUBLE, case_points

    window = store.sweeps(last=lookback)  # newest first
    found: dict[str, int] = {}
    for case_id, points in case_points(store.engine, window).items():
        ago = next((i for i, p in enumerate(points) if p is not None and p.label in TROUBLE), None)
        if ago is not None:
            found[case_id] = ago
    return found


class HistorySession:
    """One ``farm test`` run's dealings with the history store."""

    def __init__(self, options: HistoryOptions, *, tell: Callable[[str], None]) -> None:
        self.options = options
        self.tell = tell  # one line for the user: farm test prints it to stderr after "farm: "
        self.url = history_url(options.url)
        self.given = given_history_url(options.url) is not None
        self.base: Resolved | None = None
        self.comparison: Comparison | None = None
        self.opened = False
        """The session opened the store (SQLAlchemy is loaded): the sweep is recorded directly."""

    def _open(self) -> HistoryStore:
        with collector.paused():  # SQLAlchemy's modules: nothing to collect (farm.collector)
            from farm.history.store import HistoryStore

        self.opened = True
        return HistoryStore.open(self.url, tell=lambda line: self.tell(f"warning: {line}"))

    def start(self, plan: SweepPlan, *, facts: HistoryFacts, files: Sequence[Path], root: Path | None,
              message_mode: bool) -> SweepPlan:
        """Before any run: check the flags, resolve the baseline; returns the plan with its cases in
        the order asked for and the history's facts in its envelope (a new plan: none is written)."""
        opts = self.options
        tags = parse_tags(opts.tags)
        check_thresholds(opts.alpha, opts.min_drop)
        if self.given and (opts.enabled or opts.baseline or opts.order == "failing-first") and not inbox_of(self.url):
            from farm.history.engine import parse_url

            # a bad --history URL is bad input: exit 2 before anything runs. The default (the
            # farm's own SQLite file), or any plain SQLite file's, is not checked: SQLAlchemy
            # would load before the first run
            parse_url(self.url)
        if opts.baseline and facts.detach:
            raise SettingsError("--baseline waits for the sweep to compare it: not with --detach")
        if opts.gate is not None and not opts.baseline:
            raise SettingsError("--gate needs --baseline REF")
        if opts.baseline:
            from farm.history.refs import RefResolver

            resolver = RefResolver(self._open)
            try:
                self.base = resolver.resolve(opts.baseline, "--baseline")
            finally:
                resolver.close()
        recorder: Recorder = "off" if not opts.enabled or message_mode else "worker" if facts.detach else "submitter"
        journal = None
        if recorder == "submitter":  # farm test journals every run here; farm view renders the report from it
            from farm.settings import data_dir
            from farm.sweep.journal import journal_path

            journal = str(journal_path(data_dir(), plan.sweep_id))
        record = sweep_facts(facts=facts, files=files, root=root, tags=tags, pass_k=opts.pass_k, recorder=recorder,
                             journal=journal)
        if opts.order == "failing-first":
            order = failing_first(plan.case_ids, self._last_trouble(), plan.matrix.names if plan.matrix else ())
            plan = plan.model_copy(update={"cases": plan.cases.reordered(order)})
        return plan.with_envelope(history=record)

    def _last_trouble(self) -> dict[str, int]:
        store = self._open()
        try:
            return last_trouble(store)
        finally:
            store.close()

    def finish(self, report: SweepReport) -> SweepReport:
        """Mark judge-noisy criteria from the history's judge checks, compare with the baseline
        (attached to the report's envelope: a new report is returned), then record the sweep."""
        if report.envelope.recorder == "submitter":
            self._mark_judge_noise(report)
        if self.base is not None:
            from farm.stats.compare import compare, snapshot_of

            self.comparison = compare(self.base.snapshot, snapshot_of(report), alpha=self.options.alpha,
                                      min_drop=self.options.min_drop)
            report = report.model_copy(update={"envelope": report.envelope.updated(
                baseline=self.options.baseline, compared_with=self.comparison.model_dump(mode="json"))})
            self.tell(compared_line(self.options.baseline or "", self.comparison))
        if report.envelope.recorder == "submitter":
            self._leave_or_record(report)
        return report

    def _mark_judge_noise(self, report: SweepReport) -> None:
        """The scorecard's judged criteria with the newest ``farm judge-check`` figures (SPEC 23)."""
        from farm.checks import JUDGED_ASSERTIONS, JUDGED_STOCK_TESTS

        judged = JUDGED_ASSERTIONS | JUDGED_STOCK_TESTS
        if not any(c.kind in judged for stats in report.results for c in stats.criteria):
            return  # no judged check: the history is not opened for it
        try:
            from farm.history.judge_checks import mark_judge_noise

            store = self._open()
            try:
                mark_judge_noise(store.engine, report)
            finally:
                store.close()
        except Exception as exc:  # the marks are a help; the sweep's reports are written without them
            from farm.history.engine import error_reason

            self.tell(f"warning: judge checks not read from the history: {error_reason(exc)}")

    def _leave_or_record(self, report: SweepReport) -> bool:
        """Leave the sweep in a SQLite history's inbox when the session never opened the store (see the
        module docstring), else record it."""
        inbox, name = inbox_of(self.url), entry_name(report.envelope.sweep_id)
        if self.opened or inbox is None or name is None:
            return self._record(report)
        try:
            deposit(inbox, name, report)
        except OSError as exc:  # as a database that cannot be written: the sweep's reports are written all the same
            self.tell(f"warning: history not recorded in {self.url}: cannot write {inbox / name}: "
                      f"{exc.strerror or exc}")
            return False
        return True

    def _record(self, report: SweepReport) -> bool:
        try:
            store = self._open()
        except FarmError as exc:
            self.tell(f"warning: history not recorded: {exc.message}")
            return False
        try:
            head = store.record(report)
            if self.comparison is not None and self.base is not None and self.base.info is not None:
                store.store_comparison(self.base.info.pk, head.pk, f"baseline:{self.options.baseline}",
                                       self.comparison)
        except Exception as exc:  # a history that cannot be written must not lose the sweep's reports
            from farm.history.engine import error_reason, safe_url

            self.tell(f"warning: history not recorded in {safe_url(self.url)}: {error_reason(exc)}")
            return False
        finally:
            store.close()
        return True

    def exit_code(self, report: SweepReport, code: int) -> int:
        """``code`` (the sweep's own), or the baseline gate's when a comparison was made."""
        if self.comparison is None:
            return code
        return int(gate_on_baseline(self.comparison, report, self.options.gate or "regressions"))


def record_collected(report: SweepReport, tell: Callable[[str], None]) -> None:
    """``farm results``: a detached sweep is recorded in this machine's history (with its ``--tag``s),
    whether or not a worker with a ``FARM_HISTORY_URL`` recorded it too (recording is idempotent)."""
    if report.envelope.recorder != "worker" or report.outcome.status == SweepStatus.RUNNING:
        return
    session = HistorySession(HistoryOptions(), tell=tell)
    if not session._record(report):  # warned; never raises: the report is written either way
        return
    tags = report.envelope.tags
    shown = " ".join(f"{k}={v}" for k, v in tags.items())
    from farm.history.engine import safe_url

    tell(f"sweep {report.envelope.sweep_id} recorded in the history {safe_url(session.url)}"
         + (f" (tags {shown})" if shown else ""))


def compared_line(ref: str, comparison: Comparison) -> str:
    """``compared with main (20261101T…): 2 regressed (a, b), 40 unchanged``."""
    from farm.reports.comparison import headline

    regressed = [c.id for c in comparison.cases if c.verdict == "regressed"]
    shown = ", ".join(regressed[:LISTED]) + (f", … {len(regressed) - LISTED} more" if len(regressed) > LISTED else "")
    line = f"compared with {ref} ({comparison.base.sweep_id or 'report'}): {headline(comparison)}"
    return f"{line}; regressed: {shown}" if regressed else line


def start_history(options: HistoryOptions | None, facts: HistoryFacts, plan: SweepPlan, loaded: CaseStream,
                  tell: Callable[[str], None]) -> tuple[HistorySession, SweepPlan]:
    """``farm test``'s session for a sweep's plan (its suite ``loaded`` from), started, and the
    plan with what the history adds (``HistorySession.start``)."""
    session = HistorySession(options or HistoryOptions(), tell=tell)
    return session, session.start(plan, facts=facts, files=loaded.files, root=loaded.root,
                                  message_mode=loaded.kind == "message")
