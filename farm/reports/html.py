"""The interactive HTML report: one self-contained file that never touches the network.

Jinja2 (autoescape on) renders the summary, the run metadata and the stability charts as
inline SVG. The results table is built in the browser from the report embedded as JSON in a
``<script type="application/json">`` block, so a sweep of 1,000 cases × 20 runs ships its data
once and renders run details only when a row is opened. The page's CSS and JS are static
files under ``templates/``, inlined verbatim (never parsed as templates).
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any, TextIO

from markupsafe import Markup

from farm.durations import format_ms
from farm.models import BudgetFigures, CaseStats, SweepEnvelope, SweepOutcome, SweepReport, SweepSummary
from farm.models.brief import CaseBrief
from farm.reports.details import RunDetailsSource, with_details
from farm.reports.fleet import budget_text, cost_text, total_cost
from farm.reports.html_charts import histogram, spread
from farm.reports.html_kit import asset, paging_fields, script_safe_json, template_environment
from farm.reports.load import RAMP_HEADER, ramp_chart, ramp_rows
from farm.reports.matrix_html import matrix_section
from farm.reports.semantic import semantic_summary
from farm.wording import plural

__all__ = ["render_html", "report_json_parts", "write_html"]

_COMPARISONS = {
    "documented": "documented (less: actual < given)",
    "neuro-san-compat": "neuro-san-compat (less: actual > given)",
}


_DATA = "\x00farm-report-data\x00"
"""Where the embedded report's JSON goes in the rendered page (no template or datum makes NUL)."""


def write_html(report: SweepReport, out: TextIO, details: RunDetailsSource | None = None, *,
               rows: list[CaseStats] | None = None, paging: dict[str, Any] | None = None,
               charted: Sequence[CaseStats | CaseBrief] | None = None) -> None:
    """``render_html``'s page written to ``out``, the embedded report's JSON one case at a time (each
    case's run details from ``details`` when given). ``farm view`` embeds ``rows`` (a page of the
    results; the charts are of them all, or of ``charted``: every case in brief) and ``paging``."""
    summary, charted = report.summary, report.results if charted is None else charted
    meta, envelope = report.written_metadata(), report.envelope  # the table shows what the JSON report holds
    agent = _text(envelope.agent_id or "agent")
    multi_run = summary.runs_per_case > 1
    cards = _cards(summary) + _fleet_cards(summary, envelope, report.outcome.budget) + _semantic_cards(summary)
    cards += _served_cards(summary)
    page = template_environment().get_template("report.html.j2").render(
        title=f"Agent test report · {agent}",
        agent=agent,
        verdict=_verdict(summary, report.outcome),
        apart=_apart(report),
        meta_items=_meta_items(envelope),
        cards=cards,
        card_columns=card_columns(len(cards)),
        status_bar=_status_bar(summary),
        failure_classes=_failure_classes(summary),
        histogram=histogram(charted) if multi_run else None,
        spread=spread(charted) if multi_run else None,
        environment=_rows(report.environment),
        metadata=_rows({key: value for key, value in meta.items() if key != "compared_with"}),
        compared=_compared_with(envelope), matrix=matrix_section(report),
        retry_bias=_retry_bias(envelope),
        load_bias=_load_bias(summary),
        ramp=_ramp(summary),
        generator=f"agent-farm {_text(envelope.version or '')}".strip(),
        data_json=Markup(_DATA),
        css=Markup(asset("report.css") + asset("history.css")),
        js=Markup(asset("report.js")),
        **paging_fields(paging),
    )
    before, after = page.split(_DATA)
    out.write(before)
    _write_data(report, report.results if rows is None else rows, out, details)
    out.write(after)


def _write_data(report: SweepReport, rows: list[CaseStats], out: TextIO, details: RunDetailsSource | None) -> None:
    """``script_safe_json(report.model_dump_json())`` with ``rows`` as its results, case by case (the
    escapes replace single characters, so the pieces escape as the whole did)."""
    head, tail = report_json_parts(report)
    out.write(script_safe_json(head))
    for n, stats in enumerate(with_details(rows, details)):
        out.write(("," if n else "") + script_safe_json(stats.model_dump_json()))
    out.write(script_safe_json(tail))


def report_json_parts(report: SweepReport) -> tuple[str, str]:
    """``report.model_dump_json()`` before and after its results (its cases' JSON, joined by commas,
    go between). The results sit between the environment and the metadata (either may hold a
    ``"results":[]`` of its own): where is found from the report dumped without results and metadata."""
    bare = report.model_copy(update={"results": [], "metadata": {}, "envelope": SweepEnvelope(),
                                     "outcome": SweepOutcome()}).model_dump_json()
    if not bare.endswith(_BARE_END):
        raise AssertionError("SweepReport's fields are no longer summary, environment, results, metadata")
    at = len(bare) - len(_BARE_END) + len(_NO_RESULTS) - 1  # just before the results' closing ]
    shell = report.model_copy(update={"results": []}).model_dump_json()
    return shell[:at], shell[at:]


_NO_RESULTS = '"results":[]'
_BARE_END = _NO_RESULTS + ',"metadata":{}}'


def render_html(report: SweepReport) -> str:
    """Render ``report`` as one self-contained HTML page (pure: same report, same text)."""
    out = io.StringIO()
    write_html(report, out)
    return out.getvalue()


def _compared_with(envelope: SweepEnvelope) -> dict[str, Any] | None:
    """The "compared with" section, when ``farm test --baseline`` attached a comparison."""
    document = envelope.compared_with
    if document is None:
        return None
    from farm.reports.history_html import compared_with_section
    from farm.stats.compare import Comparison

    return compared_with_section(Comparison.model_validate(document))


def _retry_bias(envelope: SweepEnvelope) -> dict[str, str] | None:
    """The sweep-level retry-bias line (``metadata.retry_bias``), warning when a case is flagged."""
    bias = envelope.retry_bias
    if bias is None or not bias.line:
        return None
    return {"text": _text(bias.line), "tone": "warn" if bias.flagged else "muted"}


def _ramp(summary: SweepSummary) -> dict[str, Any] | None:
    """``farm test --ramp``'s panel (SPEC 25): its line, table and quality-under-load chart."""
    if summary.ramp is None:
        return None
    return {"line": summary.ramp.line, "header": RAMP_HEADER, "rows": ramp_rows(summary.ramp),
            "chart": ramp_chart(summary.ramp)}


def _load_bias(summary: SweepSummary) -> dict[str, str] | None:
    """The sweep-level load-bias line (``summary.load_bias``, SPEC 25), warning when a case is flagged."""
    bias = summary.load_bias
    if bias is None:
        return None
    return {"text": bias.line, "tone": "warn" if bias.flagged else "muted"}


# ------------------------------------------------------------------------------- header


def _text(value: Any) -> str:
    """A value as a person reads it: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _rows(mapping: dict[str, Any]) -> list[tuple[str, str]]:
    return [(str(key), _text(value)) for key, value in mapping.items()]


def _verdict(summary: SweepSummary, outcome: SweepOutcome) -> dict[str, str]:
    if outcome.partial:  # a partial journal's report, say: some runs are not in it
        return {"text": f"Partial: sweep {_text(outcome.status)}", "tone": "warn"}
    if outcome.stopped:
        return {"text": f"Stopped: {_text(outcome.stopped)}", "tone": "warn"}
    if summary.total_cases == 0:
        return {"text": "No cases", "tone": "muted"}
    if summary.failed_cases:
        return {"text": f"{summary.failed_cases} failed", "tone": "bad"}
    return {"text": "All passed", "tone": "good"}


def _apart(report: SweepReport) -> list[tuple[str, list[str], str]]:
    """Cases listed apart from the results: skipped by the suite, and not run (a stopped sweep)."""
    not_run = report.outcome.not_run
    groups = [("Skipped cases", report.summary.skipped_ids, "skip: true in the suite; no pass rate")]
    # the template counts each group's ids ("1 case", "2 cases")
    if not_run is not None:
        groups.append(("Cases not run", [_text(i) for i in not_run], "the sweep stopped before they ran"))
    return [(title, ids, note) for title, ids, note in groups if ids]


def _meta_items(meta: SweepEnvelope) -> list[tuple[str, str]]:
    """The run's identity line: agent, connector, sweep, times, comparison semantics."""
    comparison = _text(meta.comparison or "documented")
    items = [
        ("Agent", meta.agent_id),
        ("Connector", meta.connector),
        ("Sweep", meta.sweep_id),
        ("Started", meta.started_at),
        ("Completed", meta.completed_at),
        ("Comparison", _COMPARISONS.get(comparison, comparison)),
    ]
    rate = meta.min_pass_rate
    if rate is not None:
        items.append(("Min pass rate", _percent(rate * 100)))
    return [(label, _text(value)) for label, value in items if value not in (None, "")]


def _cards(s: SweepSummary) -> list[dict[str, str]]:
    """The summary cards: value, caption and a tone for the accent colour."""
    errors = s.by_status.get("error", 0) + s.by_status.get("timeout", 0)
    bad_runs = ", ".join(plural(s.by_status.get(k, 0), k) for k in ("error", "timeout") if s.by_status.get(k))
    rate_tone = "good" if s.overall_pass_rate >= 100 else "warn" if s.overall_pass_rate >= 80 else "bad"
    runs_each = f"{s.runs_per_case} per case" if s.runs_per_case else "no runs"
    return [
        _card("Pass rate", _percent(s.overall_pass_rate), f"of {s.total_runs:,} runs", rate_tone),
        _card("Cases", f"{s.total_cases:,}", runs_each, "neutral"),
        _card("Runs", f"{s.total_runs:,}", bad_runs or "no errors or timeouts", "warn" if errors else "neutral"),
        _card("Passed cases", f"{s.passed_cases:,}", f"{s.skipped_cases:,} skipped", "good"),
        _card("Failed cases", f"{s.failed_cases:,}", "below their requirement", _tone(s.failed_cases)),
        _card("Stable", f"{s.stable_cases:,}", "100% of runs passed", "good"),
        _card("Flaky", f"{s.flaky_cases:,}", "some runs failed", "warn" if s.flaky_cases else "neutral"),
        _card("Broken", f"{s.broken_cases:,}", "every run failed", _tone(s.broken_cases)),
        _card("Duration", format_ms(s.duration_ms), "wall clock", "neutral"),
    ]


def _fleet_cards(s: SweepSummary, envelope: SweepEnvelope, budget: BudgetFigures | None) -> list[dict[str, str]]:
    """Cost (``unknown`` when it is), runs saved by ``--adaptive``, and the budget."""
    per_run = s.cost_per_passing_run
    caption = f"{cost_text(per_run)} per passing run" if per_run is not None else "agent and judge calls"
    known = s.usage or s.judge_usage is not None or s.cost_usd is not None or budget is not None
    # no usage reported and no price: an "unknown" card says nothing (and sat alone on a row of its own)
    cards = [_card("Cost", cost_text(total_cost(s)), caption, "neutral")] if known else []
    if envelope.adaptive:
        biased = "adaptive: pass rates biased" if s.runs_saved else "adaptive: no case stopped early"
        cards.append(_card("Runs saved", f"{s.runs_saved:,}", biased, "neutral"))
    if budget is not None:
        cards.append(_card("Budget", budget_text(budget), "spent of the limit", "neutral"))
    return cards


def _semantic_cards(s: SweepSummary) -> list[dict[str, str]]:
    """Whether answers were compared by meaning, and how to get that when they were not (SPEC 16)."""
    words = semantic_summary(s)
    if words is None:
        return []
    value = {"computed": "computed", "not_installed": "not installed", "not_text": "not text",
             "off": "off"}[str(s.semantic)]
    return [_card("Semantic consistency", value, words, "neutral" if s.semantic != "not_installed" else "warn")]


def _served_cards(s: SweepSummary) -> list[dict[str, str]]:
    """The served models (SPEC 25): one card, the most served model first, the rest in its caption."""
    if s.served is None:
        return []
    served = s.served
    names = (list(served.models) or list(served.system_fingerprints) or [f"commit {c[:12]}" for c in served.commits]
             or [f"neuro-san {v}" for v in served.server_versions])
    return [_card("Served", names[0] if names else "—", served.text(), "warn" if len(names) > 1 else "neutral")]


CARDS_PER_ROW = 9
"""The most cards a wide page shows on a row."""


def card_columns(cards: int) -> int:
    """Columns for ``cards`` cards on a wide page: the rows as even as they can be, so no card sits
    alone on the last one (10 cards are two rows of 5, not 9 and 1)."""
    rows = max(1, -(-cards // CARDS_PER_ROW))
    return max(1, -(-cards // rows))


def _card(label: str, value: str, caption: str, tone: str) -> dict[str, str]:
    return {"label": label, "value": value, "caption": caption, "tone": tone}


def _tone(bad_count: int) -> str:
    return "bad" if bad_count else "neutral"


def _status_bar(s: SweepSummary) -> list[dict[str, Any]]:
    """Run counts by status as proportional segments (statuses with no runs left out)."""
    total = sum(s.by_status.values())
    order = ["passed", "failed", "error", "timeout", "skipped"]
    order += sorted(k for k in s.by_status if k not in order)
    return [
        {"status": key, "count": s.by_status[key], "share": round(100 * s.by_status[key] / total, 3)}
        for key in order
        if s.by_status.get(key)
    ]


def _failure_classes(s: SweepSummary) -> list[dict[str, str]]:
    """The sweep's failure classes as table rows: name, runs, share of failed runs, example."""
    total = sum(entry.count for entry in s.failure_classes.values())
    rows = []
    for name, entry in s.failure_classes.items():
        example = entry.example
        where = f"run {example.run}" + (f", turn {example.turn}" if example.turn else "")
        rows.append({"name": name, "count": f"{entry.count:,}", "share": _percent(round(100 * entry.count / total, 1)),
                     "case": example.case_id, "where": where, "message": example.message})
    return rows


def _percent(value: float) -> str:
    return f"{value:.0f}%" if float(value).is_integer() else f"{value:.1f}%"
