"""One recorded sweep as lists, references and trends show it, and how a stored time is written."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["SweepInfo", "iso"]


def iso(value: datetime | None) -> str | None:
    """A stored (naive UTC) time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return None if value is None else value.replace(microsecond=0).isoformat() + "Z"


@dataclass(frozen=True)
class SweepInfo:
    """One recorded sweep, as lists and references show it."""

    pk: int
    sweep_id: str
    started_at: datetime
    finished_at: datetime | None
    status: str
    stopped: str | None
    agent: str | None
    connector: str | None
    git_commit: str | None
    git_branch: str | None
    total_cases: int
    total_runs: int
    passed_cases: int
    failed_cases: int
    flaky_cases: int
    broken_cases: int
    overall_pass_rate: float
    duration_ms: float
    tags: dict[str, str] = field(default_factory=dict)
    journal: str | None = None
    """The run journal's path where the sweep ran (``farm view`` renders the full report from it)."""

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        del doc["pk"]
        doc["started_at"], doc["finished_at"] = iso(self.started_at), iso(self.finished_at)
        return doc
