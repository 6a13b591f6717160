"""What every check gets: the context of the case and, for judge checks, a judge.

Checks are pure functions of (spec, reply, context) except ``script`` (user code) and the
judge checks (``gist``/``not_gist``, ``agent``), which call out through ``Judge``.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal, Protocol

from farm.models import JsonValue, ToolCall


@dataclass(frozen=True)
class JudgeVerdict:
    """A judge's answer. ``equivocal``: the judge said neither pass nor fail; ``error``: the judge
    could not be asked (its call failed). Either way the check fails."""

    verdict: Literal["pass", "fail", "equivocal", "error"]
    reason: str = ""


class Judge(Protocol):
    """An LLM judge (a connector called at temperature 0), see ``farm.agents.judge``."""

    async def judge(self, *, criterion: str, actual: JsonValue, input: JsonValue) -> JudgeVerdict:
        """Say whether ``actual`` meets ``criterion``; never raise for a bad answer."""
        ...


class JudgeResolver(Protocol):
    """Finds the judge named by an ``agent`` assertion's ``use`` (None: the default judge)."""

    def __call__(self, use: str | None) -> Judge:
        """Return the judge; raise ``farm.errors.AgentResolutionError`` when there is none."""
        ...


@dataclass(frozen=True)
class CheckContext:
    """Everything a check may need beyond the reply."""

    input: JsonValue = None
    """The case's input as written (passed to ``script`` and judges)."""
    expected: JsonValue = None
    base_dir: str = ""
    """Directory of the suite file; ``script`` paths are relative to it."""
    neuro_san_compat: bool = False
    """Compare ``less``/``greater`` the way neuro-san's code does (actual > given for less)."""
    judges: JudgeResolver | None = field(default=None, compare=False)
    trajectory: list[ToolCall] | None = field(default=None, compare=False)
    """The run's tool calls so far, every answered turn's (the executor appends to it): what
    trajectory checks read; None: the reply's own calls."""
    confirm_failures: int = 1
    """``--confirm-failures k`` (odd): a judged check that fails is judged k times in all, the
    majority stands (1: the first verdict stands)."""


JUDGE_REPEAT: ContextVar[int] = ContextVar("farm_judge_repeat", default=0)
"""Which asking of one question this is: 0 the first, 1.. the repeats of ``--confirm-failures``.
The judge cache never answers a repeat and record/replay keys one apart from the others."""
