"""The per-criterion scorecard of a case (SPEC 17): one entry per check of each turn.

Apart from ``farm.models.stats`` so the scorecard's model and its figures stay in one place;
``CaseStats.criteria`` holds a list of them.
"""

from __future__ import annotations

from typing import Literal

from farm.models.base import FarmModel

__all__ = ["CriterionStats"]


class CriterionStats(FarmModel):
    """One check of one turn over a case's runs: how often it was met."""

    id: str
    """``<turn>.<check>``, both 1-based (``2.1``: the first check of turn 2); stable while the case is unchanged."""
    criterion: str
    """What it checks, for people: ``json_path $.city == Rome``, ``text keywords bye``."""
    kind: str
    """The check's type: ``contains``, ``json_path``, ``keywords``, ``gist``, …"""
    turn: int
    runs: int
    """Runs that reached the turn (the agent answered it); skipped runs are not counted."""
    passed: int
    pass_rate: float
    """0–100 of ``runs``."""
    pass_rate_ci: tuple[float, float]
    """95 % Wilson interval of the pass rate, 0–100."""
    label: Literal["stable", "flaky", "broken", "skipped"]
    """As cases: ``stable`` always met, ``broken`` never, ``flaky`` between; ``skipped``: no run reached the turn."""
    judge_flip_rate: float | None = None
    """Judged checks (SPEC 23): the share (0..1) of outputs whose repeated verdicts disagreed, from
    ``farm judge-check``'s newest figures in the history, else from this sweep's ``--confirm-failures``
    votes; None: not known."""
    judge_noisy: bool | None = None
    """``judge_flip_rate``'s 95 % interval lies above 5 %: the judge may explain the criterion's
    failures; None: not known."""
    judge_flips_from: Literal["judge-check", "votes"] | None = None
    """Where ``judge_flip_rate`` comes from: a recorded ``farm judge-check``, or this sweep's votes."""
