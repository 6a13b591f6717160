"""A comparison of two sweeps (``farm.stats.compare``) as a terminal table, Markdown or JSON.

The table and the Markdown list what needs a look first: regressions, then improvements,
inconclusive, new, removed and not run cases; unchanged cases are counted (``show_all`` lists them too).
HTML lives in ``farm.reports.history_html``; ``farm.reports.comparison_formats`` picks one by
``-o`` extension. Pure: no I/O.
"""

from __future__ import annotations

import json

from farm.reports.markdown import md_inline
from farm.reports.trajectory import path_text
from farm.stats.compare import VERDICTS, CaseComparison, Comparison, Counts, SweepRef
from farm.stats.compare_criteria import move_text
from farm.wording import plural

ORDER = {verdict: i for i, verdict in enumerate(VERDICTS)}
ICONS = {"regressed": "🔴", "improved": "🟢", "unchanged": "⚪", "inconclusive": "🟡", "new": "🆕", "removed": "➖",
         "not_run": "⏸"}


def rows_to_show(comparison: Comparison, show_all: bool = False) -> list[CaseComparison]:
    """The rows worth listing, worst first (every row with ``show_all``)."""
    rows = [r for r in comparison.cases if show_all or r.verdict != "unchanged" or _notes(r)]
    return sorted(rows, key=lambda r: (ORDER[r.verdict], r.delta if r.delta is not None else 0.0, r.id))


def headline(comparison: Comparison) -> str:
    """``2 regressed, 1 improved, 40 unchanged`` (verdicts with no case left out)."""
    parts = [f"{n} {verdict}" for verdict, n in comparison.summary.items() if n]
    return ", ".join(parts) if parts else "no cases"


def side(ref: SweepRef) -> str:
    tags = " ".join(f"{k}={v}" for k, v in sorted(ref.tags.items()))
    return " ".join(p for p in (ref.sweep_id or "(report)", f"({ref.started_at})" if ref.started_at else "", tags)
                    if p)


def _counts(counts: Counts | None) -> str:
    if counts is None:
        return "—"
    rate = f"{100 * counts.passed / counts.runs:.0f}%" if counts.runs else "no runs"
    return f"{counts.passed}/{counts.runs} {rate}"


def _delta(row: CaseComparison) -> str:
    return "" if row.delta is None else f"{row.delta:+.1f}"


def _q(row: CaseComparison) -> str:
    return "" if row.q_value is None else f"{row.q_value:.3g}"


def _notes(row: CaseComparison) -> list[str]:
    notes = []
    if row.class_change is not None:
        notes.append(f"{row.class_change.base} → {row.class_change.head}")
    if row.content_changed:
        notes.append("test changed")
    if row.adaptive:
        notes.append("adaptive: verdicts only")
    notes += [f"new failure: {reason}" for reason in row.new_failure_reasons]
    notes += [f"criterion moved: {move_text(m)}" for m in row.criteria_moved]
    if row.semantic_consistency is not None:
        base, head = ("—" if v is None else f"{v:.2f}" for v in row.semantic_consistency)
        if base != head:  # "1.00 → 1.00" says nothing
            notes.append(f"semantic consistency {base} → {head}")
    if row.rules_out_drop is not None:
        notes.append(f"rules out a drop over {row.rules_out_drop:g} points")
    if row.path_changed:
        notes.append(path_change_text(row))
    if row.served_changed and row.served is not None:
        notes.append(f"served model changed: {row.served[0]} → {row.served[1]}")
    return notes


def path_change_text(row: CaseComparison) -> str:
    """``path changed: a new path search → delete in 30 % of runs (q 0.002)``."""
    grew, q = row.path_grew, f"(q {row.path_q_value:.3g})"
    if grew is None:
        return f"path changed {q}"
    head = f"{round(grew.head_share * 100)} % of runs"
    if grew.base_share == 0:
        return f"path changed: a new path {path_text(grew.path)} in {head} {q}"
    return f"path changed: {path_text(grew.path)} {round(grew.base_share * 100)} % → {head} {q}"


def render_text(comparison: Comparison, show_all: bool = False) -> str:
    """The terminal table: one line per row worth a look, then the counts."""
    rows = rows_to_show(comparison, show_all)
    table = [("VERDICT", "CASE", "BASE", "HEAD", "DELTA", "Q", "NOTES")]
    table += [(r.verdict, r.id, _counts(r.base), _counts(r.head), _delta(r), _q(r), "; ".join(_notes(r)))
              for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(6)]
    lines = [f"BASE {side(comparison.base)}", f"HEAD {side(comparison.head)}",
             f"alpha {comparison.alpha:g}, min drop {comparison.min_drop:g} points", ""]
    lines += ["  ".join([*(cell.ljust(w) for cell, w in zip(row[:6], widths, strict=True)), row[6]]).rstrip()
              for row in table] if rows else []
    hidden = len(comparison.cases) - len(rows)
    if hidden:
        lines.append(f"({plural(hidden, 'unchanged case')} not listed; --all lists them)")
    lines += ["", headline(comparison)]
    return "\n".join(lines) + "\n"


def render_markdown(comparison: Comparison, show_all: bool = False) -> str:
    """Markdown for a pull-request comment."""
    regressed = comparison.summary.get("regressed", 0)
    title = f"{regressed} regressed" if regressed else "no regression"
    lines = [f"## agent-farm comparison: {title}", "",
             f"**Base** {md_inline(side(comparison.base))} → **Head** {md_inline(side(comparison.head))}", "",
             f"{md_inline(headline(comparison))} (alpha {comparison.alpha:g}, min drop "
             f"{comparison.min_drop:g} points)", ""]
    rows = rows_to_show(comparison, show_all)
    if rows:
        lines += ["| | Case | Base | Head | Δ points | q | Notes |", "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
        lines += [f"| {ICONS[r.verdict]} {r.verdict} | {md_inline(r.id)} | {_counts(r.base)} | {_counts(r.head)} | "
                  f"{_delta(r)} | {_q(r)} | {md_inline('; '.join(_notes(r)))} |" for r in rows]
    hidden = len(comparison.cases) - len(rows)
    if hidden:
        lines += ["", f"{plural(hidden, 'unchanged case')} not listed."]
    return "\n".join(lines) + "\n"


def render_json(comparison: Comparison) -> str:
    """SPEC 12's document, indented."""
    return json.dumps(comparison.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
