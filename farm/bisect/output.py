"""``farm bisect``'s result: the terminal lines, the ``-o`` JSON (SPEC 18) and Markdown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from farm.errors import SettingsError

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
    lines.append(f"{len(doc.get('probes') or [])} probes, {doc.get('runs', 0)} runs; cases: "
                 f"{', '.join(doc.get('cases') or []) or 'none'}")
    return lines


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
