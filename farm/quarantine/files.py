"""Where a suite's ``farm-quarantine.toml`` is, and whether a sweep's suites have one.

Apart from the reader (``farm.quarantine.entries``): every ``farm test`` asks whether there is a
file; only a sweep that has one loads what reads and matches its entries.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

__all__ = ["FILE_NAME", "PROJECT_MARKER", "any_project_file", "project_file"]

FILE_NAME = "farm-quarantine.toml"
PROJECT_MARKER = "package.yao"


def project_file(source: Path) -> Path:
    """Where a suite's quarantine file is: beside the nearest ``package.yao`` above the suite,
    else in the suite's own directory."""
    start = source if source.is_dir() else source.parent
    for directory in (start, *start.parents):
        if (directory / PROJECT_MARKER).is_file():
            return directory / FILE_NAME
    return start / FILE_NAME


def any_project_file(sources: Iterable[str]) -> bool:
    """Whether a suite read from ``sources`` (files or a directory) has a project quarantine file."""
    return any(project_file(Path(s)).is_file() for s in sources)
