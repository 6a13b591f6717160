"""What every executor takes (a ``SweepPlan``) and whom it tells (a ``SweepObserver``).

The local executor runs the plan in this process; the Celery executor ships it to workers.
Both emit the same events in the same order per case: ``on_result`` for every run as it
completes, ``on_case`` once a case's runs are all in, ``on_finish`` last.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from farm.agents.options import AgentOptions
from farm.agents.resolve import AgentRef
from farm.execute import RunEnvironment
from farm.models import Case, SweepReport
from farm.observers import SweepObserver
from farm.stats import DEFAULT_MAX_RUN_DETAILS, CasePlan


def new_sweep_id() -> str:
    """Sortable, readable sweep ids: ``20261122T101500-3f2a9c``."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class SweepPlan:
    """A sweep ready to run: cases, how often each runs, which agent, which settings."""

    sweep_id: str
    cases: list[Case]
    case_plans: dict[str, CasePlan]
    agents: dict[str, AgentRef]
    """Agent of each case, by case id."""
    env: RunEnvironment
    options: AgentOptions
    parallel: int = 1
    fail_fast: bool = False
    runs_per_case: int = 1
    metadata: dict[str, Any] = field(default_factory=dict)
    """Goes into the report's metadata (agent id, comparison semantics, …)."""
    max_run_details: int = DEFAULT_MAX_RUN_DETAILS
    """Runs kept per case for the report; 0 when no output shows them (JSONL stream, stdout),
    which keeps an in-process sweep's memory flat however many runs it has."""

    @property
    def total_runs(self) -> int:
        return sum(p.runs for p in self.case_plans.values())

    @property
    def agent_label(self) -> str:
        labels = sorted({ref.label for ref in self.agents.values()})
        return labels[0] if len(labels) == 1 else ", ".join(labels)


class Executor(Protocol):
    """Runs a plan to completion and returns its report (raises FarmRuntimeError on farm failure)."""

    def run(self, plan: SweepPlan, observer: SweepObserver) -> SweepReport: ...


def report_metadata(plan: SweepPlan, started_at: str) -> dict[str, Any]:
    """The report's metadata section, shared by every executor."""
    from farm import __version__

    return {
        "sweep_id": plan.sweep_id,
        "agent_id": plan.agent_label,
        "connector": plan.env.connector,
        "started_at": started_at,
        "completed_at": utc_now(),
        "version": __version__,
        "comparison": "neuro-san-compat" if plan.env.neuro_san_compat else "documented",
        **plan.metadata,
    }
