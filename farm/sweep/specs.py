"""What each stage of ``farm test`` takes of its flags: a small frozen spec per stage.

``farm.api.TestSettings`` is every flag as given; no stage below ``farm.api`` and the CLI's
``farm test`` takes it whole. ``farm.api.resolve_specs`` reads it once, in ``prepare_sweep``, into
these specs, each defined in the room that uses it:

- ``PlanSpec``: batch planning (``farm.plan.batch``);
- ``FleetFlags``: fleet keys and control (``farm.fleet.keys``);
- ``OutputSpec``: the reports asked for (``farm.reports.outputs``);
- ``ExecutorOptions``: which executor runs the sweep (``farm.sweep.executor``);
- ``HistoryFacts``: what the history keeps of the flags (``farm.history.facts``);
- ``SweepExtras``: Yao's ``--before``/``--after`` hooks and the listings (``farm.cli.extras``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from farm.history.facts import HistoryFacts
from farm.plan.batch import PlanSpec
from farm.plan.fleet import FleetFlags
from farm.reports.outputs import OutputSpec
from farm.sweep.executor import ExecutorOptions

Listing = Literal["ids", "json"]
"""``--collect-only`` lists the case ids, ``--dry-run`` each case as a JSON line."""


@dataclass(frozen=True)
class SweepExtras:
    """Yao's extras around a sweep: ``--before``/``--after`` (resolved in ``cwd``), or a listing
    instead of the sweep."""

    before: str | None = None
    after: str | None = None
    cwd: str = "."
    listing: Listing | None = None


@dataclass(frozen=True)
class SweepSpecs:
    """What each stage of ``farm test`` takes of its flags (see the module docstring)."""

    plan: PlanSpec
    fleet: FleetFlags
    outputs: OutputSpec
    executor: ExecutorOptions
    history: HistoryFacts
    extras: SweepExtras
    verbose: bool = False
    """``-v``: each distinct failure once after the sweep (and a reporter agent's details)."""


__all__ = ["Listing", "SweepExtras", "SweepSpecs"]
