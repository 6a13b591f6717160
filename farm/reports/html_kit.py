"""What every HTML page of the farm shares: the Jinja environment, the inlined static files and
script-safe JSON (the sweep report, the comparison and trend pages, the Assessor's section)."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

__all__ = ["PAGED_POLICY", "REPORT_POLICY", "asset", "paging_fields", "script_safe_json", "template_environment"]

REPORT_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
                 "base-uri 'none'; form-action 'none'")
"""A report page's Content-Security-Policy: it loads and fetches nothing."""
PAGED_POLICY = REPORT_POLICY + "; connect-src 'self'"
"""A sweep's report as ``farm view`` serves it, results paged: it fetches each page from the view."""

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


def paging_fields(paging: dict[str, Any] | None) -> dict[str, Any]:
    """A sweep report's policy and, paged (``farm view``), where its results are and the script that
    fetches them: none of it in a standalone report."""
    if paging is None:
        return {"csp": Markup(REPORT_POLICY), "paging": "", "paged_js": ""}  # a constant: verbatim, as before
    return {"csp": Markup(PAGED_POLICY), "paging": Markup(script_safe_json(json.dumps(paging))),
            "paged_js": Markup(asset("report_paged.js"))}
