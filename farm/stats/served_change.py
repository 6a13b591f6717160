"""Did the provider change what served a case between two sweeps (SPEC 25)? ``farm compare``
marks such verdicts ``served_changed``: a verdict that moved then may be the provider's doing."""

from __future__ import annotations

from farm.models import ServedCounts


def served_changed(base: ServedCounts | None, head: ServedCounts | None) -> bool | None:
    """The two sides were served by different models, fingerprints or neuro-san server versions;
    None: a side reported none."""
    if base is None or head is None:
        return None
    pairs = [(set(b), set(h)) for b, h in ((base.models, head.models),
                                            (base.system_fingerprints, head.system_fingerprints),
                                            (base.server_versions, head.server_versions)) if b and h]
    if not pairs:
        return None
    return any(b != h for b, h in pairs)


def served_figures(base: ServedCounts | None, head: ServedCounts | None) -> dict[str, object]:
    """``served_changed`` and, when it did, ``served`` (each side's models with counts as text)."""
    changed = served_changed(base, head)
    if changed is None:
        return {}
    if not changed or base is None or head is None:
        return {"served_changed": False}
    return {"served_changed": True, "served": (base.text() or "?", head.text() or "?")}
