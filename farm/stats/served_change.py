"""Did the provider change what served a case between two sweeps (SPEC 25)? ``farm compare``
marks such verdicts ``served_changed``: a verdict that moved then may be the provider's doing."""

from __future__ import annotations

from farm.models import ServedCounts


def served_changed(base: ServedCounts | None, head: ServedCounts | None) -> bool | None:
    """The two sides were served by different models or fingerprints; None: a side reported none."""
    if base is None or head is None:
        return None
    models_known = bool(base.models and head.models)
    prints_known = bool(base.system_fingerprints and head.system_fingerprints)
    if not models_known and not prints_known:
        return None
    return ((models_known and set(base.models) != set(head.models))
            or (prints_known and set(base.system_fingerprints) != set(head.system_fingerprints)))


def served_figures(base: ServedCounts | None, head: ServedCounts | None) -> dict[str, object]:
    """``served_changed`` and, when it did, ``served`` (each side's models with counts as text)."""
    changed = served_changed(base, head)
    if changed is None:
        return {}
    if not changed or base is None or head is None:
        return {"served_changed": False}
    return {"served_changed": True, "served": (base.text() or "?", head.text() or "?")}
