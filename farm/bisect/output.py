"""``farm bisect``'s result: the terminal lines, the ``-o`` JSON (SPEC 18) and Markdown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from farm.errors import SettingsError
from farm.stats.served_change import served_changed

FORMATS = {".json": "json", ".md": "markdown", ".markdown": "markdown"}


def output_format(path: str) -> str:
    found = FORMATS.get(Path(path).suffix.lower())
    if found is None:
        raise SettingsError(f"-o {path}: farm bisect writes .json or .md")
    if not Path(path).resolve().parent.is_dir():
        raise SettingsError(f"-o {path}: directory {Path(path).resolve().parent} does not exist")
    return found


def summary_lines(doc: dict[str, Any]) -> list[str]:
    lines = []
    if doc.get("interrupted"):
        lines.append("interrupted: what was learned so far")
    if doc.get("first_bad") and not doc.get("interrupted"):
        lines.append(f"first bad commit: {doc['first_bad']}" + (f" {doc['subject']}" if doc.get("subject") else ""))
    suspects = doc.get("suspects") or []
    if len(suspects) > 1 or (doc.get("interrupted") and suspects):
        lines.append(f"still suspect ({len(suspects)}): {' '.join(s[:12] for s in suspects)}")
    if (said := served_line(doc)) is not None:
        lines.append(said)
    lines.append(f"{len(doc.get('probes') or [])} probes, {doc.get('runs', 0)} runs; cases: "
                 f"{', '.join(doc.get('cases') or []) or 'none'}")
    return lines


def served_at_ends(good: Any, bad: Any) -> dict[str, Any]:
    """``served`` at GOOD and BAD and ``served_changed`` for the bisection's document (SPEC 25)."""
    dump = {"good": None if good is None else good.model_dump(), "bad": None if bad is None else bad.model_dump()}
    return {"served": dump, "served_changed": served_changed(good, bad),
            "served_text": [None if end is None else end.text() for end in (good, bad)]}


def served_line(doc: dict[str, Any]) -> str | None:
    """What a bisection says when the provider served GOOD and BAD by different models (else None)."""
    if not doc.get("served_changed"):
        return None
    good, bad = doc["served_text"]
    change = f"the served model changed between GOOD and BAD: {good} → {bad}"
    if doc.get("first_bad"):
        return f"{change}; the first bad commit may be the provider's doing, not the commit's"
    return f"no bad commit found, and {change}: a verdict that moved may have moved with the model"


def render_markdown(doc: dict[str, Any]) -> str:
    lines = ["# farm bisect", ""]
    lines += [f"- {line}" for line in summary_lines(doc)]
    lines += ["", f"GOOD `{doc.get('good')}`, BAD `{doc.get('bad')}`", "",
              "| commit | runs | passed | verdict |", "| --- | ---: | ---: | --- |"]
    lines += [f"| `{p['commit'][:12]}` | {p['runs']} | {p['passed']} | {p['verdict']} |" for p in doc.get("probes", [])]
    return "\n".join(lines) + "\n"


def write_outputs(paths: list[tuple[str, str]], doc: dict[str, Any]) -> None:
    for path, fmt in paths:
        text = json.dumps(doc, indent=2) + "\n" if fmt == "json" else render_markdown(doc)
        Path(path).write_text(text, encoding="utf-8")
