"""The history store: record sweeps, find them, bless baselines, keep comparisons.

``HistoryStore.open(url)`` migrates the database to the newest schema first
(``farm.history.engine``), then records the sweeps waiting in a SQLite file's inbox
(``farm.history.inbox``), so every reader sees them. Reads return plain dataclasses; a sweep as
a comparison sees it is a ``SweepSnapshot`` (``farm.stats.compare``), the same thing a JSON
report file becomes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, Select, and_, delete, func, or_, select
from sqlalchemy.exc import SQLAlchemyError

from farm.errors import InputError
from farm.history import inbox
from farm.history.criteria import criteria_counts
from farm.history.engine import error_reason, open_engine
from farm.history.record import Recorded, insert_or_ignore, now_utc, record_sweep
from farm.history.sweep_info import SweepInfo, iso
from farm.history.tables import baselines, case_results, comparisons, sweep_tags, sweeps
from farm.matrix.split import arm_reports
from farm.models import SweepReport
from farm.wording import plural

if TYPE_CHECKING:  # the comparison's models load where a sweep is read back, not to record one
    from farm.stats.compare import Comparison, SweepSnapshot


log = logging.getLogger("farm.history")

_INFO_COLUMNS = [sweeps.c[name] for name in SweepInfo.__dataclass_fields__ if name not in ("pk", "tags")]


@dataclass(frozen=True)
class Baseline:
    name: str
    sweep: SweepInfo
    set_at: datetime


class HistoryStore:
    """Sweeps, baselines and comparisons in one SQL database (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str, *, create: bool = True, tell: Callable[[str], None] | None = None) -> HistoryStore:
        """The store at ``url``, migrated to the newest schema, its inbox's sweeps recorded (``create=False``:
        a missing SQLite file is read as an empty history, not made, unless sweeps wait in its inbox).
        ``tell``: where a warning of the inbox goes (one line; default: the ``farm.history`` log)."""
        waiting = inbox.waiting(inbox.inbox_of(url))
        store = cls(open_engine(url, create=create or bool(waiting)))
        if waiting:
            store.take_inbox(waiting, tell or log.warning)
        return store

    def close(self) -> None:
        self.engine.dispose()

    def record(self, report: SweepReport) -> Recorded:
        """Store a finished sweep once (idempotent on its sweep id); a matrix's arms each as a sweep
        ``MATRIX:ARM`` tagged ``matrix`` and ``arm`` (SPEC 22; the first arm's is returned)."""
        recorded = [record_sweep(self.engine, part) for part in arm_reports(report)]
        return recorded[0]

    def take_inbox(self, entries: list[Path], tell: Callable[[str], None]) -> None:
        """Record the inbox's ``entries`` and remove each one recorded; never raises. A database error
        leaves them all for the next reader; an entry that is not a sweep report is set aside."""
        for entry in entries:
            try:
                report = inbox.read_entry(entry)
                if report is not None:
                    self.record(report)
            except (SQLAlchemyError, OSError) as exc:  # the database (or the disk): the next reader tries again
                left = plural(len(inbox.waiting(entry.parent)), "finished sweep")
                tell(f"history: {left} in {entry.parent} not recorded yet ({error_reason(exc)}); "
                     "kept for the next reader")
                return
            except Exception as exc:  # not a sweep report (or one the store cannot take): never read again
                bad = inbox.set_aside(entry)
                if bad is not None:
                    tell(f"history: {entry} is not a sweep report ({_first_line(exc)}); moved aside to {bad.name}")
                continue
            inbox.remove(entry)

    # ----------------------------------------------------------------------------- finding sweeps

    def _infos(self, query: Select[Any]) -> list[SweepInfo]:
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            pks = [row.id for row in rows]
            tags: dict[int, dict[str, str]] = {pk: {} for pk in pks}
            if pks:
                for sweep, key, value in conn.execute(select(sweep_tags).where(sweep_tags.c.sweep.in_(pks))):
                    tags[sweep][key] = value
        return [SweepInfo(pk=row.id, **{c.name: row._mapping[c.name] for c in _INFO_COLUMNS}, tags=tags[row.id])
                for row in rows]

    def _query(self, tag: tuple[str, str] | None = None) -> Select[Any]:
        query = select(sweeps.c.id, *_INFO_COLUMNS)
        if tag is not None:
            query = query.join(sweep_tags, sweep_tags.c.sweep == sweeps.c.id).where(
                sweep_tags.c.key == tag[0], sweep_tags.c.value == tag[1])
        return query.order_by(sweeps.c.started_at.desc(), sweeps.c.id.desc())

    def sweeps(self, *, last: int = 20, tag: tuple[str, str] | None = None, agent: str = "", status: str = "",
               since: datetime | None = None, before: datetime | None = None) -> list[SweepInfo]:
        """The ``last`` sweeps newest first, of those that match every filter given: ``tag``, ``agent``
        (a case-insensitive part of the agent's id), ``status``, started at or after ``since`` and
        before ``before`` (naive UTC). Filtered in SQL, so an old match is found past any number of
        newer sweeps."""
        query = self._query(tag)
        if agent:
            query = query.where(func.lower(sweeps.c.agent).contains(agent.lower(), autoescape=True))
        if status:
            query = query.where(sweeps.c.status == status)
        if since is not None:
            query = query.where(sweeps.c.started_at >= since)
        if before is not None:
            query = query.where(sweeps.c.started_at < before)
        return self._infos(query.limit(last))

    def latest(self, *, tag: tuple[str, str] | None = None, skip: int = 0,
               before: SweepInfo | None = None) -> SweepInfo | None:
        """The newest sweep (``skip`` newer ones passed over; only sweeps older than ``before``)."""
        query = self._query(tag)
        if before is not None:
            query = query.where(or_(sweeps.c.started_at < before.started_at,
                                    and_(sweeps.c.started_at == before.started_at, sweeps.c.id < before.pk)))
        found = self._infos(query.offset(skip).limit(1))
        return found[0] if found else None

    def sweep(self, sweep_id: str) -> SweepInfo | None:
        """The sweep with this exact id, else the only one whose id starts with it."""
        found = self._infos(self._query().where(sweeps.c.sweep_id == sweep_id))
        if not found:
            found = self._infos(self._query().where(sweeps.c.sweep_id.startswith(sweep_id, autoescape=True)).limit(2))
        return found[0] if len(found) == 1 else None

    def count(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(sweeps)).scalar_one())

    def snapshot(self, info: SweepInfo) -> SweepSnapshot:
        """The sweep's cases as a comparison sees them."""
        from farm.models import ServedCounts
        from farm.stats.compare import CaseSnapshot, SweepSnapshot
        from farm.stats.path_change import PathCount

        columns = [case_results.c[n] for n in ("case_id", "runs", "passed", "skipped", "label", "case_passed",
                                               "content_hash", "failure_reasons", "adaptive",
                                               "semantic_consistency", "trajectories", "served")]
        from farm.history.judge_checks import newest_judge_checks

        with self.engine.connect() as conn:
            rows = conn.execute(select(*columns).where(case_results.c.sweep == info.pk)).all()
        judged = newest_judge_checks(self.engine, [r.case_id for r in rows], info.sweep_id)
        with self.engine.connect() as conn:
            criteria = criteria_counts(conn, info.pk, {key: p.judge_noisy for key, p in judged.items()})
        cases = [CaseSnapshot(id=r.case_id, runs=r.runs - r.skipped, passed=r.passed, label=r.label,
                              case_passed=r.case_passed, content_hash=r.content_hash, adaptive=r.adaptive,
                              failure_reasons=[f["reason"] for f in r.failure_reasons or []],
                              criteria=criteria.get(r.case_id, []),
                              semantic_consistency=r.semantic_consistency,
                              paths=None if r.trajectories is None else [PathCount.model_validate(p)
                                                                         for p in r.trajectories],
                              served=None if r.served is None else ServedCounts.model_validate(r.served))
                 for r in rows]
        return SweepSnapshot(sweep_id=info.sweep_id, started_at=iso(info.started_at), tags=dict(info.tags),
                             cases=cases, partial=info.status != "complete")

    # ----------------------------------------------------------------------------------- baselines

    def set_baseline(self, name: str, sweep_id: str) -> SweepInfo:
        """Bless a sweep under ``name`` (replacing what the name pointed at)."""
        info = self.sweep(sweep_id)
        if info is None:
            raise InputError(f"baseline {name}: no recorded sweep {sweep_id!r}")
        with self.engine.begin() as conn:
            conn.execute(delete(baselines).where(baselines.c.name == name))
            conn.execute(baselines.insert().values(name=name, sweep=info.pk, set_at=now_utc()))
        return info

    def baselines(self) -> list[Baseline]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(baselines).order_by(baselines.c.name)).all()
        infos = {i.pk: i for i in self._infos(self._query().where(sweeps.c.id.in_([r.sweep for r in rows])))}
        return [Baseline(r.name, infos[r.sweep], r.set_at) for r in rows if r.sweep in infos]

    def baseline(self, name: str) -> SweepInfo | None:
        found = [b.sweep for b in self.baselines() if b.name == name]
        return found[0] if found else None

    def remove_baseline(self, name: str) -> bool:
        with self.engine.begin() as conn:
            return bool(conn.execute(delete(baselines).where(baselines.c.name == name)).rowcount)

    # --------------------------------------------------------------------------------- comparisons

    def store_comparison(self, base_pk: int, head_pk: int, kind: str, comparison: Comparison) -> bool:
        """Keep a comparison once per (base sweep, head sweep, kind); False when it was kept already."""
        row = {"base": base_pk, "head": head_pk, "kind": kind, "created_at": now_utc(),
               "regressed": comparison.summary.get("regressed", 0), "document": comparison.model_dump(mode="json")}
        with self.engine.begin() as conn:
            stored = conn.execute(insert_or_ignore(conn, comparisons).values(row).returning(comparisons.c.id))
            return stored.scalar() is not None

    def comparisons_of(self, head: SweepInfo) -> dict[str, Comparison]:
        """The comparisons kept for a sweep, by kind."""
        from farm.stats.compare import Comparison

        with self.engine.connect() as conn:
            rows = conn.execute(select(comparisons.c.kind, comparisons.c.document)
                                .where(comparisons.c.head == head.pk)).all()
        return {r.kind: Comparison.model_validate(r.document) for r in rows}


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
