"""What each stage of ``farm test`` takes of its flags: a small frozen spec per stage.

``farm.api.TestSettings`` is every flag as given; no stage below ``farm.api`` and the CLI's
``farm test`` takes it whole. ``resolve_specs`` reads it once, in ``prepare_sweep``, into
these specs, each defined in the room that uses it:

- ``PlanSpec``: batch planning (``farm.plan.batch``);
- ``FleetFlags``: fleet keys and control (``farm.fleet.keys``);
- ``OutputSpec``: the reports asked for (``farm.reports.outputs``);
- ``ExecutorOptions``: which executor runs the sweep (``farm.sweep.executor``);
- ``HistoryFacts``: what the history keeps of the flags (``farm.history.facts``);
- ``SweepExtras``: Yao's ``--before``/``--after`` hooks and the listings (``farm.cli.extras``);
- ``AgentOptions``: how agents are resolved (``agent_options``, ``farm.agents.options``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from farm.agents.options import AgentOptions
from farm.api.settings import TestSettings
from farm.history.facts import HistoryFacts
from farm.matrix.arms import matrix_plan
from farm.plan.batch import PlanSpec
from farm.plan.fleet import FleetFlags
from farm.reports.outputs import OutputSpec
from farm.settings import safe_url
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


def resolve_specs(settings: TestSettings) -> SweepSpecs:
    """What each stage takes of ``settings`` (this module), read once."""
    return SweepSpecs(
        plan=PlanSpec(agent_name=settings.name, runs=settings.runs, min_pass_rate=settings.min_pass_rate,
                      adaptive=settings.fleet.adaptive_rule(), run_pattern=settings.run_pattern,
                      patterns=settings.patterns, ramp_levels=len(settings.ramp or (1,)),
                      matrix=matrix_plan(settings.matrix, settings.cwd, settings.name)),
        fleet=settings.fleet,
        outputs=OutputSpec(outputs=settings.outputs, reporter=settings.reporter, verbose=settings.verbose),
        executor=ExecutorOptions(broker=settings.broker, queue=settings.queue, detach=settings.detach),
        history=HistoryFacts(
            runs=settings.runs, min_pass_rate=settings.min_pass_rate, parallel=settings.parallel,
            timeout_s=settings.timeout_s, fail_fast=settings.fail_fast, confirm_failures=settings.confirm_failures,
            name=safe_url(settings.name) if settings.name else None,  # -n http://user:PASSWORD@host/
            connector=settings.connector, judge=settings.judge, queue=settings.queue,
            neuro_san_compat=settings.neuro_san_compat, user=settings.user, team=settings.team,
            detach=settings.detach, distributed=bool(settings.broker), cwd=Path(settings.cwd)),
        extras=SweepExtras(before=settings.before, after=settings.after, cwd=settings.cwd,
                           listing="json" if settings.dry_run else "ids" if settings.collect_only else None),
        verbose=settings.verbose,
    )


def agent_options(settings: TestSettings) -> AgentOptions:
    """How the sweep's agents (and a ``-r`` reporter agent) are resolved: read once per prepare."""
    options = AgentOptions.from_env(
        Path(settings.cwd), connector=settings.connector, judge=settings.judge, neuro_san_server=settings.server
    )
    return dataclasses.replace(options, isolate=True) if settings.isolate else options


__all__ = ["Listing", "SweepExtras", "SweepSpecs", "agent_options", "resolve_specs"]
