"""What the history and ``farm test`` need of a comparison (SPEC 12) without comparing: the check of
its thresholds (defaults: ``farm.defaults``), made before any run, and which cases it compares on
verdicts only, recorded with each case. Only a sweep with a baseline compares, or one read back;
the comparison's models and tests cost every ``farm test`` ~7 ms otherwise (issue 32)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from farm.errors import SettingsError

if TYPE_CHECKING:
    from farm.models import CaseStats, SweepEnvelope


def check_thresholds(alpha: float, min_drop: float) -> None:
    """``--alpha`` in (0, 0.5) and ``--min-drop`` in [0, 100]; SettingsError (exit 2) otherwise."""
    if not 0 < alpha < 0.5:
        raise SettingsError(f"--alpha {alpha}: must be between 0 and 0.5")
    if not 0 <= min_drop <= 100:
        raise SettingsError(f"--min-drop {min_drop}: must be between 0 and 100 points")


def is_adaptive(stats: CaseStats, envelope: SweepEnvelope) -> bool:
    """A case of an adaptive sweep (``metadata.adaptive``: ``exact`` or ``sequential``), or a case
    marked adaptive itself (``CaseStats.adaptive``): compared on verdicts only."""
    return envelope.adaptive or stats.adaptive
