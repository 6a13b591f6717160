"""What every HTML page of the farm shares: the Jinja environment, the inlined static files and
script-safe JSON (the sweep report, the comparison and trend pages, the Assessor's section)."""

from __future__ import annotations

import functools
from importlib import resources

from jinja2 import Environment, PackageLoader, StrictUndefined

__all__ = ["asset", "script_safe_json", "template_environment"]

_SCRIPT_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def script_safe_json(text: str) -> str:
    """Escape JSON text so it cannot end the ``<script>`` block that holds it.

    ``<``, ``>``, ``&`` only occur inside JSON strings, where ``\\u003c`` means the same, so
    the text still parses to the same value. U+2028/2029 are escaped for old JS parsers.
    """
    for char, escape in _SCRIPT_ESCAPES:
        text = text.replace(char, escape)
    return text


@functools.cache
def template_environment() -> Environment:
    """The Jinja environment of the farm's HTML pages (autoescape on, strict about undefined names)."""
    return Environment(
        loader=PackageLoader("farm.reports", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@functools.cache
def asset(name: str) -> str:
    """A static file of ``templates/``; a ``</`` in it would end its element early."""
    text = resources.files("farm.reports").joinpath("templates", name).read_text(encoding="utf-8")
    if "</" in text:
        raise ValueError(f"farm/reports/templates/{name}: must not contain '</'")
    return text
