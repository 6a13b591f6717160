"""What ``farm assess`` finds: failures, the modes they fall into, per case (SPEC 14.3).

Plain data that round-trips through JSON, like every model of the farm.
"""

from __future__ import annotations

from pydantic import Field

from farm.models import FarmModel
from farm.models.base import empty_list

__all__ = ["Assessment", "CaseAssessment", "Failure", "FailureMode"]


class Failure(FarmModel):
    """One failed run, as the Assessor reads it."""

    run: int
    turn: int | None = None
    failure_class: str
    criteria: str
    """What the run had to do (neuro-san's ``acceptance_criteria``): the failed check and its expectation."""
    sample: str
    """What the run did (neuro-san's ``text_sample``): the value the check saw, or the error."""
    path: list[str] = Field(default_factory=empty_list)
    """The tool names the run called, in order (SPEC 21); ``[]``: none."""


class FailureMode(FarmModel):
    """A way a case fails, with the failures that fell into it."""

    mode: str
    count: int
    share: float
    """Of the case's failures, 0–1."""
    failure_classes: list[str]
    examples: list[Failure]
    new: bool = False
    """Not among the modes remembered for this case before this assessment."""


class CaseAssessment(FarmModel):
    """One case: its runs, passes and failure modes, most frequent first."""

    id: str
    runs: int
    passed: int
    modes: list[FailureMode] = Field(default_factory=empty_list)
    judge_calls: int = 0
    """One per group of failures (same class, same meaning of the sample; same sample without the
    ``[semantic]`` extra), never per run."""


class Assessment(FarmModel):
    """The whole assessment (the JSON ``farm assess -o assess.json`` writes)."""

    cases: list[CaseAssessment]
    judge: str | None = None
    """The judge that named the modes; None: the modes are the failure classes."""
    source: str = ""
