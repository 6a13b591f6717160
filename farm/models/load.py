"""Load (SPEC 25): how many of the sweep's runs were in flight as each run started, whether a
case passes at a different rate when the sweep was busy (``load_bias``), and ``farm test
--ramp``'s quality-under-load curve (``ramp``).

A run's ``in_flight`` counts the sweep's runs begun and not yet finished as it began, itself
included (1: it ran alone): in-process the executor's runs, on a fleet every worker's (the
sweep's running runs in the store). A run waiting for a rate-limit slot holds its place, so the
figure is the same with or without rate limits.
"""

from __future__ import annotations

from pydantic import Field

from farm.models.base import FarmModel, empty_list


class InFlightCount(FarmModel):
    """A case's scored runs that started with ``in_flight`` runs in flight, and how many passed."""

    in_flight: int
    runs: int
    passed: int


class LoadBias(FarmModel):
    """A case's runs started above the sweep's median ``in_flight`` against those started at or
    below it: Fisher's exact test (two-sided), Benjamini–Hochberg q across the cases tested.

    When no run of the sweep started above its median (a steady sweep starts nearly every run at
    its ``--parallel``), the runs at the median count as high: the runs made while the sweep was
    filling up are the low ones."""

    in_flight: list[InFlightCount] = Field(default_factory=empty_list)
    """The case's scored runs by ``in_flight``, lowest first (the sweep's median is known only
    once every case is in: the split below is made then)."""
    median_in_flight: float | None = None
    """The sweep's median ``in_flight`` over every scored run; null: not split yet."""
    high_from: int | None = None
    """The fewest runs in flight a *high* run started with: the smallest ``in_flight`` above the
    median, or the median itself when none is above it; null: not split yet."""
    high_runs: int = 0
    """Runs started with ``high_from`` or more in flight."""
    high_passed: int = 0
    low_runs: int = 0
    """Runs started with fewer."""
    low_passed: int = 0
    high_pass_rate: float | None = None
    """Percent; null: no run above the median."""
    low_pass_rate: float | None = None
    q: float | None = None
    """Benjamini–Hochberg q of the Fisher p-value; null: the case was not tested (no run on one side)."""
    flagged: bool = False
    """q ≤ 0.05: the case passes at a different rate under load."""


class LoadBiasSummary(FarmModel):
    """The sweep's load line: its median ``in_flight``, the cases tested and flagged."""

    median_in_flight: float
    high_from: int
    """Runs started with this many or more in flight are the high ones (``LoadBias.high_from``)."""
    max_in_flight: int
    cases: int
    """Cases with runs on both sides of the median (tested)."""
    flagged: list[str] = Field(default_factory=empty_list)
    """Ids of the flagged cases."""
    line: str
    """What the terminal prints."""


class RampLevel(FarmModel):
    """One concurrency level of ``farm test --ramp``: every case's runs of that level."""

    concurrency: int
    """Runs in flight at once (``--parallel`` for that level)."""
    runs: int
    """Scored runs of the level."""
    passed: int
    pass_rate: float
    """Percent."""
    pass_rate_ci: tuple[float, float]
    """95 % Wilson interval, percent."""
    p50_ms: float | None = None
    """Median run duration; null: no scored run."""
    p95_ms: float | None = None
    rate_limited: int = 0
    """Runs that ended on an HTTP 429 after the retries (``infra:429``, ``infra:quota``)."""
    timeouts: int = 0
    """Runs that timed out."""


class Ramp(FarmModel):
    """``farm test --ramp``: the suite run ``runs`` times per case at each concurrency."""

    runs: int
    """Runs per case at each level (``--runs``, else each case's own: the most of them)."""
    levels: list[RampLevel]
    """In the order given."""
    line: str
    """What the terminal prints: pass rate per level."""


__all__ = ["InFlightCount", "LoadBias", "LoadBiasSummary", "Ramp", "RampLevel"]
