"""Where a case's served model changed across recorded sweeps (SPEC 25): ``farm history`` and its
trend page mark those sweeps, so a pass rate that moved there is read with the provider in mind."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Protocol

from farm.models import ServedCounts
from farm.stats.served_change import served_changed


class _Point(Protocol):
    @property
    def sweep_id(self) -> str: ...

    @property
    def served(self) -> dict[str, Any] | None: ...


def served_changes(points: Sequence[_Point | None]) -> list[dict[str, str]]:
    """``{"sweep_id", "from", "to"}`` per sweep whose served models or fingerprints differ from the
    case's sweep before (sweeps that recorded none are passed over), oldest first."""
    known = [(p.sweep_id, ServedCounts.model_validate(p.served)) for p in points
             if p is not None and p.served is not None]
    return [{"sweep_id": new_id, "from": old.text(), "to": new.text()}
            for (_, old), (new_id, new) in itertools.pairwise(known) if served_changed(old, new)]
