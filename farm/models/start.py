"""A sweep's ``start`` event, typed: what is about to run.

Every observer gets it first (``farm.sweep.observers.SweepObserver.on_start``). A distributed
sweep's submitter streams it through Redis as this model's JSON (``farm.distributed.store.plans``)
and its follower reads it back with the model's own validation (``farm.distributed.submit``).
"""

from __future__ import annotations

from farm.models.base import FarmModel


class SweepStart(FarmModel):
    """The ``start`` event: what is about to run."""

    model_config = FarmModel.model_config | {"frozen": True}

    sweep_id: str
    agent_id: str
    total_cases: int
    total_runs: int
    timestamp: str


__all__ = ["SweepStart"]
