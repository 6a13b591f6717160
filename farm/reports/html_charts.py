"""The HTML report's stability charts as geometry for its templates: the pass-rate histogram (cases per
bucket of pass rate) and the duration spread of the slowest cases (min, avg ± std, max), with their
axis ticks. Pure arithmetic on ``CaseStats`` (or their ``CaseBrief``); ``farm.reports.html`` renders them as inline SVG.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

from farm.durations import format_ms
from farm.models import CaseStats
from farm.models.brief import CaseBrief

_PASS_BUCKETS = (
    ("0%", "bad"),
    ("<20%", "bad"),
    ("20–39%", "warn"),
    ("40–59%", "warn"),
    ("60–79%", "warn"),
    ("80–99%", "fair"),
    ("100%", "good"),
)
_SPREAD_ROWS = 20
"""The duration chart shows this many of the slowest cases: more would not be readable."""


def _ran(case: CaseStats | CaseBrief) -> bool:
    """Whether a case has runs that count (not skipped) and so belongs in the charts."""
    return case.label != "skipped" and case.runs > case.skipped


def _bucket(rate: float) -> int:
    if rate <= 0:
        return 0
    if rate >= 100:
        return len(_PASS_BUCKETS) - 1
    return 1 + min(int(rate // 20), 4)


def histogram(cases: Sequence[CaseStats | CaseBrief]) -> dict[str, Any]:
    """Geometry of the pass-rate distribution: how many cases fall in each bucket."""
    counts = [0] * len(_PASS_BUCKETS)
    for case in cases:
        if _ran(case):
            counts[_bucket(case.pass_rate)] += 1
    width, height, left, top, bottom = 560, 230, 40, 18, 34
    plot_w, plot_h = width - left - 12, height - top - bottom
    ticks = _nice_ticks(max(counts), integer=True)
    scale = plot_h / ticks[-1]
    slot = plot_w / len(counts)
    bars = []
    for i, ((label, tone), count) in enumerate(zip(_PASS_BUCKETS, counts, strict=True)):
        h = count * scale
        x = left + i * slot + slot * 0.15
        bars.append({"x": x, "y": top + plot_h - h, "w": slot * 0.7, "h": h, "cx": x + slot * 0.35,
                     "label": label, "tone": tone, "count": count})
    grid = [{"y": top + plot_h - t * scale, "label": f"{t:g}"} for t in ticks]
    return {"width": width, "height": height, "left": left, "right": width - 12, "base": top + plot_h,
            "bars": bars, "grid": grid, "total": sum(counts)}


def spread(cases: Sequence[CaseStats | CaseBrief]) -> dict[str, Any]:
    """Geometry of the duration spread (min, avg ± std, max) of the slowest cases."""
    # the slowest first, as sorted(...)[:_SPREAD_ROWS] would give them, without sorting every case
    ran = [c for c in cases if _ran(c)]
    shown = heapq.nsmallest(_SPREAD_ROWS, ran, key=lambda c: (-c.max_duration_ms, c.id))
    ticks = _nice_ticks(max((c.max_duration_ms for c in shown), default=0.0))
    width, left, right, top, row = 560, 176, 16, 10, 22
    scale = (width - left - right) / ticks[-1]

    def x(ms: float) -> float:
        return left + max(ms, 0.0) * scale

    rows = []
    for i, case in enumerate(shown):
        lo = max(case.min_duration_ms, case.avg_duration_ms - case.std_deviation_ms)
        hi = min(case.max_duration_ms, case.avg_duration_ms + case.std_deviation_ms)
        label = case.id if len(case.id) <= 26 else case.id[:25] + "…"
        rows.append({"y": top + i * row + row / 2, "label": label, "id": case.id,
                     "min": x(case.min_duration_ms), "max": x(case.max_duration_ms),
                     "avg": x(case.avg_duration_ms), "lo": x(lo), "hi": x(hi),
                     "tip": _spread_tip(case)})
    base = top + len(rows) * row + 4
    axis = [{"x": x(t), "label": format_ms(t)} for t in ticks]
    return {"width": width, "height": base + 24, "left": left, "right": width - right, "top": top,
            "base": base, "rows": rows, "axis": axis, "shown": len(rows), "total": len(ran)}


def _spread_tip(case: CaseStats | CaseBrief) -> str:
    return (f"{case.id}: min {format_ms(case.min_duration_ms)}, avg {format_ms(case.avg_duration_ms)}"
            f" ± {format_ms(case.std_deviation_ms)}, max {format_ms(case.max_duration_ms)}")


def _nice_ticks(top: float, target: int = 4, integer: bool = False) -> list[float]:
    """Axis ticks from 0 past ``top`` in steps of 1, 2, 2.5 or 5 × a power of ten."""
    if not math.isfinite(top) or top <= 0:
        return [0.0, 1.0]
    raw = top / target
    magnitude = 10 ** math.floor(math.log10(raw))
    factors = (1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)
    step = next(f * magnitude for f in factors if f * magnitude >= raw)
    if integer:
        step = max(1.0, float(round(step)))
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]
