"""``report.summary``: a few plain-text lines a person reads at the end of a sweep."""

from __future__ import annotations

import re

from farm.durations import format_ms
from farm.models import SweepReport
from farm.reports.criteria import criteria_lines
from farm.reports.failures import failure_lines
from farm.reports.fleet import fleet_line
from farm.stats import case_verdict

MAX_IDS = 20
"""Case ids listed per line; the rest are counted."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # no terminal escapes from case ids


def _ids(ids: list[str]) -> str:
    shown = ", ".join(_CONTROL.sub("", i) for i in ids[:MAX_IDS])
    more = len(ids) - MAX_IDS
    return f"{shown} (+{more} more)" if more > 0 else shown


def render_summary(report: SweepReport) -> str:
    """Cases passed/failed, runs and pass rate, then the failed, flaky and broken case ids."""
    s = report.summary
    agent = _CONTROL.sub("", str(report.envelope.agent_id or "agent"))
    lines = [
        f"{agent}: {s.passed_cases}/{s.passed_cases + s.failed_cases} cases passed "
        f"({s.failed_cases} failed, {s.skipped_cases} skipped)",
        f"runs: {s.total_runs} ({s.runs_per_case} per case), pass rate {s.overall_pass_rate}%, "
        f"duration {format_ms(s.duration_ms)}",
    ]
    groups = (
        ("failed", [r.id for r in report.results if case_verdict(r) == "failed"]),
        ("flaky", [r.id for r in report.results if r.label == "flaky"]),
        ("broken", [r.id for r in report.results if r.label == "broken"]),
    )
    lines += [f"{name}: {_ids(ids)}" for name, ids in groups if ids]
    lines += [_CONTROL.sub("", line) for line in failure_lines(report) + criteria_lines(report)]
    lines.append(fleet_line(report, always=True) or "")
    return "\n".join(lines) + "\n"
