"""Load in the reports (SPEC 25): a case's ``load_bias`` in words, ``farm test --ramp``'s table and
the geometry of its quality-under-load chart (HTML: inline SVG, ``charts.html.j2``)."""

from __future__ import annotations

from typing import Any

from farm.durations import format_ms
from farm.models import CaseStats, LoadBias, Ramp

RAMP_HEADER = ("Concurrency", "Runs", "Pass rate", "95% interval", "p50", "p95", "429s", "Timeouts")


def load_text(bias: LoadBias | None) -> str | None:
    """``5+ in flight: 40.0% of 10 runs; fewer: 90.0% of 10 (q=0.01, flagged)``; None: the
    case's runs were not split, or all on one side."""
    if bias is None or bias.high_from is None or not (bias.high_runs and bias.low_runs):
        return None
    text = (f"{bias.high_from}+ in flight: {bias.high_pass_rate}% of {bias.high_runs} runs; "
            f"fewer: {bias.low_pass_rate}% of {bias.low_runs}")
    if bias.q is not None:
        text += f" (q={bias.q:g}{', flagged' if bias.flagged else ''})"
    return text


def case_load_text(stats: CaseStats) -> str | None:
    return load_text(stats.load_bias)


def ramp_rows(ramp: Ramp) -> list[tuple[str, ...]]:
    """One row per level, as ``RAMP_HEADER`` names the columns."""
    return [(str(level.concurrency), str(level.runs), f"{level.pass_rate}%",
             f"{level.pass_rate_ci[0]}–{level.pass_rate_ci[1]}%",
             "—" if level.p50_ms is None else format_ms(level.p50_ms),
             "—" if level.p95_ms is None else format_ms(level.p95_ms),
             str(level.rate_limited), str(level.timeouts)) for level in ramp.levels]


def ramp_chart(ramp: Ramp) -> dict[str, Any]:
    """Geometry of the quality-under-load curve: pass rate (with its interval) per concurrency,
    the levels spaced evenly in the order given."""
    width, height, left, right, top, bottom = 560, 230, 44, 16, 14, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    slot = plot_w / max(len(ramp.levels), 1)

    def y(rate: float) -> float:
        return top + plot_h - plot_h * max(0.0, min(rate, 100.0)) / 100

    points = []
    for i, level in enumerate(ramp.levels):
        x = left + slot * (i + 0.5)
        points.append({"x": x, "y": y(level.pass_rate), "lo": y(level.pass_rate_ci[0]),
                       "hi": y(level.pass_rate_ci[1]), "label": str(level.concurrency),
                       "tip": f"{level.concurrency} in flight: {level.pass_rate}% of {level.runs} runs "
                              f"({level.pass_rate_ci[0]}–{level.pass_rate_ci[1]}%)"})
    grid = [{"y": y(t), "label": f"{t}%"} for t in (0, 25, 50, 75, 100)]
    line = " ".join(f"{p['x']:.1f},{p['y']:.1f}" for p in points)
    return {"width": width, "height": height, "left": left, "right": width - right, "base": top + plot_h,
            "points": points, "grid": grid, "line": line}


__all__ = ["RAMP_HEADER", "case_load_text", "load_text", "ramp_chart", "ramp_rows"]
