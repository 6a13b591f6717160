"""``farm assess``: the failures of a sweep grouped into named failure modes (SPEC 14.3).

``farm.assess.modes`` holds the algorithm, ``memory`` the per-case mode memory, ``render`` and
``html`` the outputs, ``run`` the command as a library function.
"""

from __future__ import annotations

from farm.assess.memory import InMemoryModes, JsonFileModes, ModeMemory, default_modes_path
from farm.assess.models import Assessment, CaseAssessment, Failure, FailureMode
from farm.assess.modes import ModeJudge, assess_case, failures_of, read_answer
from farm.assess.render import render_assessment_json, render_assessment_markdown, render_assessment_text

__all__ = [
    "Assessment",
    "CaseAssessment",
    "Failure",
    "FailureMode",
    "InMemoryModes",
    "JsonFileModes",
    "ModeJudge",
    "ModeMemory",
    "assess_case",
    "default_modes_path",
    "failures_of",
    "read_answer",
    "render_assessment_json",
    "render_assessment_markdown",
    "render_assessment_text",
]
