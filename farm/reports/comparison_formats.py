"""``farm compare -o FILE``: the comparison's formats by extension, and their renderers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from farm.errors import SettingsError
from farm.reports.comparison import render_json, render_markdown, render_text
from farm.stats.compare import Comparison

__all__ = ["COMPARISON_EXTENSIONS", "RENDERERS", "comparison_format", "render_comparison"]

COMPARISON_EXTENSIONS = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".html": "html",
                         ".htm": "html", ".txt": "text"}
"""``farm compare -o`` extension → format."""


def _render_html(comparison: Comparison) -> str:
    from farm.reports.history_html import render_comparison_html  # Jinja2: loaded on demand

    return render_comparison_html(comparison)


RENDERERS: dict[str, Callable[[Comparison], str]] = {
    "text": render_text, "markdown": render_markdown, "json": render_json, "html": _render_html,
}


def comparison_format(path: str | Path) -> str:
    """The format ``farm compare -o PATH`` writes; an unknown extension is an input error."""
    suffix = Path(path).suffix.lower()
    if suffix not in COMPARISON_EXTENSIONS:
        raise SettingsError(f"-o {path}: cannot tell the format from {suffix or 'no extension'!r} "
                            f"(supported: {', '.join(COMPARISON_EXTENSIONS)})")
    return COMPARISON_EXTENSIONS[suffix]


def render_comparison(comparison: Comparison, fmt: str) -> str:
    return RENDERERS[fmt](comparison)
