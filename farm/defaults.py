"""Defaults that ``farm test --help`` shows, apart from the modules that use them.

Each lives here once and its module imports it from here: the command's flags import this module,
not the planner, the statistics or pydantic (``farm test --help``: issue 32).
"""

from __future__ import annotations

DEFAULT_PARALLEL = 8
"""Runs in flight in-process (SPEC 10: an LLM sweep must not be serial by default; Yao's is 1)."""

SPRT_ALPHA = 0.05
"""Default chance that the SPRT passes a case whose pass probability is p0."""
SPRT_BETA = 0.10
"""Default chance that the SPRT fails a case whose pass probability is p1."""
SPRT_ZONE = 0.2
"""Default width of the indifference zone: p0 = p1 − 0.2 (at least 0)."""

PRICES_ENV = "FARM_PRICES"
"""The variable naming a price table of one's own (``farm.stats.prices``)."""

DEFAULT_ALPHA = 0.10
"""False discovery rate of the regression (and improvement) calls of a comparison."""
DEFAULT_MIN_DROP = 10.0
"""Points of pass rate a change must reach to be called a regression or an improvement."""

FARM_VERSION = "0.1.0"
"""The farm's version (``farm.__version__``), written in every report's envelope (``version``); the
package's own is pyproject's, which ``farm --version`` reads."""

MAX_RUNS_PER_CASE = 1_000_000
"""The most runs of one case (``--runs``, a ``success_ratio``'s n): more is a typo, not a plan (a
sweep keeps a bit per run, and ``1/99999999999`` planned 10^11 runs)."""
MAX_SWEEP_RUNS = 100_000_000
"""The most runs of one sweep (cases times runs): past it the plan is refused, not attempted."""

__all__ = ["DEFAULT_ALPHA", "DEFAULT_MIN_DROP", "DEFAULT_PARALLEL", "FARM_VERSION", "MAX_RUNS_PER_CASE",
           "MAX_SWEEP_RUNS", "PRICES_ENV", "SPRT_ALPHA", "SPRT_BETA", "SPRT_ZONE"]
