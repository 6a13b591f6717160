"""``farm test --ramp 2,4,8,16`` (SPEC 25): the suite's runs at each concurrency, and what each
level did: pass rate with its 95 % Wilson interval, p50/p95 run duration, runs that ended on a
429, runs that timed out (``farm.models.load.Ramp``).

The plan holds each case's runs for every level (``ramp_plan``: ``runs × levels``, passes
required in proportion); the in-process executor runs level after level, each with that many
runs in flight, and tells a ``RampTally`` the level of every run it records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from farm.errors import SettingsError
from farm.models import Ramp, RampLevel, RunResult, RunStatus, run_status
from farm.stats.measures import percent, wilson_percent

RATE_LIMITED = frozenset({"infra:429", "infra:quota"})
"""Failure classes of a run that ended on an HTTP 429 after its retries."""

MAX_RAMP_LEVEL = 10_000
"""The most runs in flight a level may ask for."""


def parse_ramp(text: str) -> tuple[int, ...]:
    """``"2,4,8,16"`` → (2, 4, 8, 16); a ValueError says what is wrong (empty, not a whole number,
    below 1, above ``MAX_RAMP_LEVEL``, given twice)."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise ValueError(f"{text!r}: give concurrency levels separated by commas, e.g. 2,4,8,16")
    levels: list[int] = []
    for part in parts:
        if not part.isdigit():
            raise ValueError(f"{part!r} is not a whole number (levels are runs in flight, e.g. 2,4,8,16)")
        level = int(part)
        if not 1 <= level <= MAX_RAMP_LEVEL:
            raise ValueError(f"{level}: a level must be between 1 and {MAX_RAMP_LEVEL:,} runs in flight")
        if level in levels:
            raise ValueError(f"{level} is given twice")
        levels.append(level)
    return tuple(levels)


def check_ramp(levels: Sequence[int] | None, *, broker: str | None, adaptive: bool, matrix: bool = False) -> None:
    """Raise SettingsError (exit 2) for a ramp the farm cannot run: bad levels, a distributed sweep
    (its workers, not the farm, set how many runs are in flight), ``--adaptive`` (a case decided
    early would leave the later levels without its runs), a matrix (``--arm``/``--matrix``: the
    levels would undo the arms' interleaving)."""
    if levels is None:
        return
    if not levels:
        raise SettingsError("--ramp: give at least one concurrency level, e.g. 2,4,8,16")
    try:
        parse_ramp(",".join(str(level) for level in levels))
    except ValueError as exc:
        raise SettingsError(f"--ramp: {exc}") from None
    if broker:
        raise SettingsError("--ramp runs in-process only: on a fleet the workers set how many runs are in "
                            "flight (drop --broker / FARM_BROKER_URL)")
    if adaptive:
        raise SettingsError("--ramp and --adaptive do not go together: every level needs every case's runs")
    if matrix:
        raise SettingsError("--ramp and --arm/--matrix do not go together: the levels would undo the arms' "
                            "interleaving (ramp each agent on its own with -n)")


def percentile(ordered: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile of sorted values (None: none)."""
    if not ordered:
        return None
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


class RampTally:
    """The runs of each level as the executor records them."""

    def __init__(self, levels: Sequence[int]) -> None:
        self.levels = list(levels)
        self._durations: list[list[float]] = [[] for _ in levels]
        self._passed = [0] * len(levels)
        self._limited = [0] * len(levels)
        self._timeouts = [0] * len(levels)

    def level_of(self, run: int, case_runs: int) -> int:
        """The level (0-based) run number ``run`` of a case planned ``case_runs`` runs (every
        level's) is made at: the runs in order, an equal share a level; a skipped case's one
        placeholder at the first."""
        share = case_runs // len(self.levels)
        return 0 if share == 0 else min((run - 1) // share, len(self.levels) - 1)

    def add(self, result: RunResult, case_runs: int) -> None:
        """Count ``result``, a run of a case planned ``case_runs`` runs."""
        level = self.level_of(result.run, case_runs)
        status = run_status(result.status)
        if status is RunStatus.SKIPPED:
            return
        self._durations[level].append(result.duration_ms)
        self._passed[level] += status is RunStatus.PASSED
        self._timeouts[level] += status is RunStatus.TIMEOUT
        self._limited[level] += result.failure_class in RATE_LIMITED

    def figures(self, runs: int) -> Ramp:
        """The report's ``ramp``; ``runs``: runs per case at each level."""
        levels = []
        for i, concurrency in enumerate(self.levels):
            durations = sorted(self._durations[i])
            n, passed = len(durations), self._passed[i]
            p50, p95 = percentile(durations, 0.5), percentile(durations, 0.95)
            levels.append(RampLevel(concurrency=concurrency, runs=n, passed=passed, pass_rate=percent(passed, n),
                                    pass_rate_ci=wilson_percent(passed, n),
                                    p50_ms=None if p50 is None else round(p50, 1),
                                    p95_ms=None if p95 is None else round(p95, 1),
                                    rate_limited=self._limited[i], timeouts=self._timeouts[i]))
        return Ramp(runs=runs, levels=levels, line=ramp_line(levels))


def ramp_line(levels: Sequence[RampLevel]) -> str:
    """``ramp: 2 in flight 100.0%, 4 100.0%, 8 45.0% (3 timeouts)`` for the terminal."""
    parts = []
    for i, level in enumerate(levels):
        text = f"{level.concurrency}{' in flight' if i == 0 else ''} {level.pass_rate}%" if level.runs else \
            f"{level.concurrency}{' in flight' if i == 0 else ''} no run"
        extra = [f"{n} {what}" for n, what in ((level.rate_limited, "429s"), (level.timeouts, "timeouts")) if n]
        parts.append(text + (f" ({', '.join(extra)})" if extra else ""))
    return "ramp (pass rate by runs in flight): " + ", ".join(parts)


__all__ = ["MAX_RAMP_LEVEL", "RampTally", "parse_ramp", "percentile", "ramp_line"]
