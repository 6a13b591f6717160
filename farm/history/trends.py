"""Pass rates of cases over recorded sweeps: the reads behind ``farm history`` and its trend page.

A trend is a case's points over a window of sweeps, oldest first, with a gap (None) where the
case did not run. ``class_changes`` lists where its label moved (stable → flaky, …); a case is
*flagged* when its newest label is ``flaky`` or ``broken`` and its previous one was not, or when
its pass rate fell by ``BIG_DROP`` points or more since the sweep before (80 % → 42 % is news even
though the case was flaky before and after). "Label" is the stable/flaky/broken judgement here;
"class" stays the stability class of the reports (``mostly_stable``, …).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Engine, select

from farm.history.judge_checks import CriterionKey, JudgeCheckPoint
from farm.history.served_trend import served_changes
from farm.history.sweep_info import SweepInfo
from farm.history.tables import case_results, sweeps
from farm.stats.compare_criteria import CriterionMove, move_text
from farm.wording import plural

SPARKS = "▁▂▃▄▅▆▇█"
GAP = "·"
TROUBLE = ("flaky", "broken")
BIG_DROP = 20.0
"""Points of pass rate lost between a case's two newest sweeps that flag it whatever its label."""


@dataclass(frozen=True)
class CasePoint:
    """A case's figures in one sweep."""

    sweep_id: str
    pass_rate: float
    ci_low: float
    ci_high: float
    label: str
    runs: int
    passed: int
    skipped: int
    semantic_consistency: float | None = None
    trajectory_consistency: float | None = None
    """SPEC 21: share of runs on the most common tool-call path; None: no run called a tool."""
    served: dict[str, Any] | None = None
    """SPEC 25: runs per served model, fingerprint and commit; None: none recorded."""


_POINT_COLUMNS = [case_results.c[n] for n in ("pass_rate", "ci_low", "ci_high", "label", "runs", "passed",
                                                 "skipped", "semantic_consistency", "trajectory_consistency",
                                                 "served")]


def _point(row: Any) -> CasePoint:
    return CasePoint(sweep_id=row.sweep_id, pass_rate=row.pass_rate, ci_low=row.ci_low, ci_high=row.ci_high,
                     label=row.label, runs=row.runs, passed=row.passed, skipped=row.skipped,
                     semantic_consistency=row.semantic_consistency, trajectory_consistency=row.trajectory_consistency,
                     served=row.served)


def case_points(engine: Engine, window: Sequence[SweepInfo], case_id: str | None = None
                ) -> dict[str, list[CasePoint | None]]:
    """Every case of ``window`` (or only ``case_id``), its points aligned with ``window``'s order."""
    position = {info.pk: i for i, info in enumerate(window)}
    query = (select(case_results.c.case_id, case_results.c.sweep, sweeps.c.sweep_id, *_POINT_COLUMNS)
             .join(sweeps, sweeps.c.id == case_results.c.sweep).where(case_results.c.sweep.in_(list(position))))
    if case_id is not None:
        query = query.where(case_results.c.case_id == case_id)
    trends: dict[str, list[CasePoint | None]] = {}
    with engine.connect() as conn:
        for row in conn.execute(query):
            points = trends.setdefault(row.case_id, [None] * len(window))
            points[position[row.sweep]] = _point(row)
    return dict(sorted(trends.items()))


def case_trend(engine: Engine, case_id: str, last: int = 90) -> list[CasePoint]:
    """One case's points in the ``last`` sweeps that ran it, oldest first (one indexed query)."""
    query = (select(sweeps.c.sweep_id, *_POINT_COLUMNS).join(sweeps, sweeps.c.id == case_results.c.sweep)
             .where(case_results.c.case_id == case_id)
             .order_by(sweeps.c.started_at.desc(), sweeps.c.id.desc()).limit(last))
    with engine.connect() as conn:
        return [_point(row) for row in reversed(conn.execute(query).all())]


def sparkline(points: Sequence[CasePoint | None]) -> str:
    """One character per sweep: ▁ (0 %) … █ (100 %), ``·`` where the case did not run."""
    return "".join(GAP if p is None else SPARKS[min(len(SPARKS) - 1, int(p.pass_rate / 100 * len(SPARKS)))]
                   for p in points)


def class_changes(points: Sequence[CasePoint | None]) -> list[dict[str, str]]:
    """Where the case's label moved: ``{"sweep_id", "from", "to"}`` per change, oldest first."""
    seen = [p for p in points if p is not None and p.label != "skipped"]
    return [{"sweep_id": new.sweep_id, "from": old.label, "to": new.label}
            for old, new in itertools.pairwise(seen) if old.label != new.label]


def flag(points: Sequence[CasePoint | None]) -> str | None:
    """``became flaky`` / ``became broken`` when the newest change turned the case that way, else
    ``fell 80% → 42%`` when its newest pass rate is ``BIG_DROP`` points or more below the one before."""
    seen = [p for p in points if p is not None and p.label != "skipped"]
    changes = class_changes(points)
    if changes and seen and seen[-1].sweep_id == changes[-1]["sweep_id"] and changes[-1]["to"] in TROUBLE:
        return f"became {changes[-1]['to']}"
    if len(seen) >= 2 and seen[-2].pass_rate - seen[-1].pass_rate >= BIG_DROP:
        return f"fell {seen[-2].pass_rate:g}% → {seen[-1].pass_rate:g}%"
    return None


JudgeTrends = dict[CriterionKey, tuple[str | None, list[JudgeCheckPoint]]]
"""Per judged criterion its scorecard id and recorded judge checks (``farm.history.judge_checks``)."""


def judge_trend_document(judged: JudgeTrends) -> list[dict[str, Any]]:
    """Per judged criterion its ``judge_flip_rate`` over the recorded ``farm judge-check``s, oldest first."""
    return [{"case": key[0], "criterion_id": criterion_id, "turn": key[1], "check": key[2], "criterion": key[3],
             "points": [{**asdict(p), "judge_flip_rate_ci": list(p.judge_flip_rate_ci)} for p in points]}
            for key, (criterion_id, points) in judged.items()]


def judge_trend_line(key: CriterionKey, points: Sequence[JudgeCheckPoint]) -> str:
    """``  c: agent says yes: judge flip rate 0% → 10% → 40% NOISY (3 checks, newest 5 verdicts × 50)``."""
    rates = " → ".join("-" if p.judge_flip_rate is None else f"{100 * p.judge_flip_rate:.3g}%" for p in points)
    newest = points[-1]
    return (f"  {key[0]}: {key[2]} {key[3]}: judge flip rate {rates}{' NOISY' if newest.judge_noisy else ''} "
            f"({plural(len(points), 'check')}, newest {newest.repeats} verdicts × {newest.outputs} outputs)")


def trend_document(window: Sequence[SweepInfo], trends: dict[str, list[CasePoint | None]],
                   moves: dict[str, list[CriterionMove]] | None = None,
                   judged: JudgeTrends | None = None) -> dict[str, Any]:
    """What the trend page embeds: the sweeps (oldest first) and every case's points and changes
    (with ``criteria_moved``: the criteria that moved between its last two sweeps), and
    ``judge_checks``: each judged criterion's flip rate over the recorded judge checks."""
    moved = moves or {}
    return {
        "judge_checks": judge_trend_document(judged or {}),
        "sweeps": [info.to_json() for info in window],
        "cases": [{"id": case_id, "points": [None if p is None else asdict(p) for p in points],
                   "changes": class_changes(points), "flag": flag(points), "served_changes": served_changes(points),
                   "criteria_moved": [m.model_dump() for m in moved.get(case_id, [])]}
                  for case_id, points in trends.items()],
    }


def _sweep_line(info: SweepInfo) -> tuple[str, ...]:
    status = info.status + (f" ({info.stopped})" if info.stopped else "")
    tags = " ".join(f"{k}={v}" for k, v in sorted(info.tags.items()))
    return (f"{info.started_at:%Y-%m-%d %H:%M}", info.sweep_id, status, info.agent or "", str(info.total_cases),
            f"{info.overall_pass_rate:g}%", str(info.flaky_cases), str(info.broken_cases), tags)


def _columns(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["  " + "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
            for row in rows]


def render_trend_text(window: Sequence[SweepInfo], trends: dict[str, list[CasePoint | None]], *,
                      show_all: bool = False, moves: dict[str, list[CriterionMove]] | None = None,
                      judged: JudgeTrends | None = None) -> str:
    """``farm history``'s terminal output: the sweeps, newest first, then each case's sparkline, then
    each judged criterion's flip rate over the recorded judge checks."""
    judge_lines = ["judge checks (judge_flip_rate per farm judge-check, oldest → newest):",
                   *(judge_trend_line(key, points) for key, (_, points) in (judged or {}).items())] if judged else []
    if not window:
        return "\n".join(["no sweeps recorded", *judge_lines]) + "\n"
    header = ("STARTED (UTC)", "SWEEP", "STATUS", "AGENT", "CASES", "PASS", "FLAKY", "BROKEN", "TAGS")
    lines = [f"sweeps ({len(window)}, newest first):",
             *_columns([header, *(_sweep_line(i) for i in reversed(window))]), "",
             "cases (pass rate per sweep, oldest → newest; · = not run):"]
    shown = {cid: pts for cid, pts in trends.items()
             if show_all or class_changes(pts) or any(p is not None and p.pass_rate < 100 for p in pts)
             or cid in (moves or {}) or served_changes(pts)}
    rows = []
    for case_id, points in shown.items():
        newest = next((p for p in reversed(points) if p is not None), None)
        rate = f"{newest.pass_rate:g}%" if newest is not None else "—"
        rows.append((case_id, sparkline(points), rate, flag(points) or ""))
    lines += _columns(rows) if rows else []
    lines += [f"  {case_id}: criterion moved: {move_text(m)}" for case_id, moved in (moves or {}).items()
              if case_id in shown for m in moved]
    lines += [f"  {case_id}: served model changed at {c['sweep_id']}: {c['from']} → {c['to']}"
              for case_id, points in shown.items() for c in served_changes(points)]
    hidden = len(trends) - len(shown)
    if hidden:
        lines.append(f"  ({plural(hidden, 'case')} passed every run of every sweep; --all lists them)")
    lines += ["", *judge_lines] if judge_lines else []
    return "\n".join(lines) + "\n"
