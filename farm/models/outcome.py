"""How a sweep ended, typed: its status, why it stopped, the cases not run, the budget spent.

``SweepReport.outcome`` holds it; the one finisher (``farm.sweep.lifecycle.finish_sweep``) sets
it. Written out, its fields are keys of the report's ``metadata`` (``metadata.status``,
``metadata.stopped``, ``metadata.not_run``, ``metadata.reason``, ``metadata.budget``), as they
always were, so reports read by ``jq`` and older JSON reports read back keep working.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from farm.models.base import FarmModel


class StopReason(enum.StrEnum):
    """Why a sweep stopped scheduling runs before its plan was done (``metadata.stopped``)."""

    FAIL_FAST = "fail-fast"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    BUDGET = "budget"
    QUOTA = "quota"


class SweepStatus(enum.StrEnum):
    """How a sweep ended (``metadata.status``, SPEC 11)."""

    COMPLETE = "complete"
    """Every planned run ran."""
    STOPPED = "stopped"
    """Stopped early; ``metadata.stopped`` says why."""
    FAILED = "failed"
    """The farm could not finish it; ``metadata.reason`` says why."""
    ABANDONED = "abandoned"
    """Its publisher vanished before publishing every run, and it was closed."""
    RUNNING = "running"
    """Not an end: a report of a sweep still in flight (``farm report`` on a partial journal or
    a distributed sweep with no report yet)."""


PARTIAL_STATUSES = frozenset({SweepStatus.FAILED, SweepStatus.ABANDONED, SweepStatus.RUNNING})
"""``metadata.status`` of a sweep that did not finish: its report holds only some of its runs."""


class BudgetFigures(FarmModel):
    """``metadata.budget`` of a budgeted sweep (SPEC 13): the limits and what the sweep spent."""

    model_config = FarmModel.model_config | {"frozen": True}

    max_usd: float | None = None
    max_tokens: int | None = None
    spent_usd: float = 0.0
    spent_tokens: int = 0


class SweepOutcome(FarmModel):
    """How the sweep ended. Every field is None on a report that does not say (older reports
    carry no ``status``: ``sweep_status`` reads them as ``stopped`` when they say why, else
    ``complete``)."""

    model_config = FarmModel.model_config | {"frozen": True}

    status: SweepStatus | None = None
    stopped: StopReason | None = None
    """Why it stopped scheduling runs early."""
    not_run: list[str] | None = None
    """Cases with no run at all, in plan order: given when the sweep stopped or some case did not run."""
    reason: str | None = None
    """Why it failed, was abandoned, or fleet control stopped it, in words."""
    budget: BudgetFigures | None = None

    @property
    def partial(self) -> bool:
        """The sweep did not finish (failed, abandoned, or a snapshot of one in flight)."""
        return self.status in PARTIAL_STATUSES

    def sweep_status(self) -> str:
        """SPEC 11's status when the report has one; else ``stopped`` when it says why, else ``complete``."""
        if self.status is not None:
            return self.status.value
        return SweepStatus.STOPPED.value if self.stopped else SweepStatus.COMPLETE.value


OUTCOME_KEYS = tuple(SweepOutcome.model_fields)
"""The ``metadata`` keys the outcome is written under."""


def split_outcome(written: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``metadata`` as written out → (the other keys, the outcome's keys)."""
    rest = {k: v for k, v in written.items() if k not in OUTCOME_KEYS}
    return rest, {k: written[k] for k in OUTCOME_KEYS if written.get(k) is not None}


def outcome_of(metadata: Mapping[str, Any]) -> SweepOutcome:
    """The outcome a written-out ``metadata`` records (an older report's, say)."""
    return SweepOutcome.model_validate(split_outcome(metadata)[1])


__all__ = [
    "OUTCOME_KEYS",
    "PARTIAL_STATUSES",
    "BudgetFigures",
    "StopReason",
    "SweepOutcome",
    "SweepStatus",
    "outcome_of",
    "split_outcome",
]
