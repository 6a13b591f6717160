"""What a sweep spent, per scored run: the basis of an estimate (pure: reads a report only)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from farm.models import SweepReport


def tokens_of(usage: Mapping[str, Any] | None) -> int | None:
    if not usage:
        return None
    return int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)


@dataclass(frozen=True)
class PerRun:
    """A sweep's figures per scored run (None: unknown)."""

    runs: int
    """Scored runs the figures were measured over."""
    tokens: float | None
    cost_usd: float | None
    judge_tokens: float | None
    judge_cost_usd: float | None
    run_ms: float
    """Wall time of one run."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PerRun:
        def number(key: str) -> float | None:
            value = data.get(key)
            return None if value is None else float(value)

        return cls(runs=int(data.get("runs") or 0), tokens=number("tokens"), cost_usd=number("cost_usd"),
                   judge_tokens=number("judge_tokens"), judge_cost_usd=number("judge_cost_usd"),
                   run_ms=float(data.get("run_ms") or 0.0))


def _per(value: float | None, runs: int) -> float | None:
    return None if value is None else value / runs


def spend_of(report: SweepReport) -> dict[str, Any] | None:
    """The report's ``PerRun`` as JSON, for the history (None: no scored run)."""
    scored = sum(c.runs - c.skipped for c in report.results)
    if scored == 0:
        return None
    s = report.summary
    run_ms = sum(c.avg_duration_ms * (c.runs - c.skipped) for c in report.results) / scored
    tokens, judge_tokens = tokens_of(s.usage), tokens_of(s.judge_usage)
    return PerRun(runs=scored, tokens=_per(tokens, scored), cost_usd=_per(s.cost_usd, scored),
                  judge_tokens=_per(judge_tokens, scored), judge_cost_usd=_per(s.judge_cost_usd, scored),
                  run_ms=run_ms).to_json()
