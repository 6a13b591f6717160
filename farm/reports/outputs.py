"""Where a sweep's reports go: every ``-o`` planned and checked writable before the first run.

``-o`` repeats (SPEC 10): ``-o report.html -o junit.xml -o summary.md`` renders each format from
the same sweep. Each path is checked before any agent is called (its directory exists, the file
can be created or replaced): a report that cannot be written after an hour of paid LLM runs is
the failure this module exists to prevent. ``write_report`` is the one way a report reaches a
file, for the CLI and for Python callers alike.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from farm.agents.secrets import masking, redact
from farm.errors import ReporterError, SettingsError
from farm.models import SweepReport
from farm.reports import BUILTIN_REPORTERS, format_for_path, write_rendered, writer_for

NO_RUN_DETAILS = ("jsonl", "stdout", "summary")
"""Outputs that never show kept runs: the JSONL stream writes every run as it completes."""

_REPORTER_SUFFIX = {"json": ".json", "markdown": ".md", "html": ".html", "summary": ".txt"}


@dataclass(frozen=True)
class OutputSpec:
    """The reports asked of a sweep, as given (``plan_outputs`` checks them into targets)."""

    outputs: tuple[str, ...] = ()
    """``-o``, repeatable."""
    reporter: str | None = None
    """``-r``: a built-in report format, or an agent that writes the document."""
    verbose: bool = False
    """``-v``: a reporter agent's call is told to be verbose."""


@dataclass(frozen=True)
class OutputTarget:
    """One requested output of a sweep."""

    path: Path | None
    """The file; None: stdout (``-o -``, or direct message mode)."""
    format: str
    """A renderer's format (``jsonl``, ``json``, ``markdown``, ``html``, ``junit``, ``summary``),
    ``reporter`` (a ``-r`` agent writes the document) or ``stdout`` (the agent's answer printed)."""


STDOUT = "-"
"""``-o -``: the report goes to stdout (SPEC 26)."""


def default_output_path(root: Path, now: datetime | None = None, suffix: str = ".jsonl") -> Path:
    """``<input dir>/output-YYYYMMDDHHMMSS.jsonl`` (``-2``, ``-3``… when taken)."""
    stamp = (now or datetime.now()).strftime("%Y%m%d%H%M%S")
    path = root / f"output-{stamp}{suffix}"
    n = 1
    while path.exists():
        n += 1
        path = root / f"output-{stamp}-{n}{suffix}"
    return path


def plan_outputs(spec: OutputSpec, *, root: Path | None, inputs: Sequence[Path], cwd: Path) -> list[OutputTarget]:
    """The outputs of a sweep, each checked writable; raises SettingsError (exit 2) otherwise.

    ``root`` is the ``-i`` root (None in message mode); ``inputs`` are the suite files, which an
    output must not overwrite.
    """
    outputs, reporter = spec.outputs, spec.reporter
    builtin = BUILTIN_REPORTERS.get(reporter) if reporter else None
    if not outputs:
        return [_default_target(reporter, builtin, root)]
    if reporter and len(outputs) > 1:
        raise SettingsError(f"-r {reporter} writes one document: give one -o (got {len(outputs)})")
    targets: list[OutputTarget] = []
    seen: dict[Path, str] = {}
    for given in outputs:
        if given == STDOUT:
            targets.append(_stdout_target(reporter, builtin, seen))
            continue
        path = Path(given).expanduser()
        path = path if path.is_absolute() else cwd / path
        link = f" (a symlink to {path.resolve()})" if path.is_symlink() else ""  # written through: its target
        if path.resolve() in seen:
            raise SettingsError(f"-o {given}{link}: given twice (as -o {seen[path.resolve()]})")
        seen[path.resolve()] = given
        if any(path.resolve() == f.resolve() for f in inputs):
            raise SettingsError(f"-o {given}{link}: is one of the input suites; it would be overwritten")
        fmt = (builtin or "reporter") if reporter else format_for_path(path)
        check_writable(path, given)
        targets.append(OutputTarget(path, fmt))
    return targets


def _stdout_target(reporter: str | None, builtin: str | None, seen: dict[Path, str]) -> OutputTarget:
    """``-o -``: JSONL on stdout, streamed as runs finish, or the built-in format ``-r`` names."""
    if reporter and builtin is None:
        raise SettingsError(f"-o -: a reporter agent ({reporter}) writes a file: its suffix names the format")
    if Path(STDOUT) in seen:
        raise SettingsError("-o -: given twice (stdout takes one report)")
    seen[Path(STDOUT)] = STDOUT
    return OutputTarget(None, builtin or "jsonl")


def _default_target(reporter: str | None, builtin: str | None, root: Path | None) -> OutputTarget:
    if reporter and builtin is None:
        raise SettingsError(f"-r {reporter}: a reporter agent needs -o FILE for its document")
    if root is None:  # a literal message: its answer (or a built-in report) goes to stdout
        return OutputTarget(None, builtin or "stdout")
    path = default_output_path(root, suffix=_REPORTER_SUFFIX.get(builtin or "", ".jsonl"))
    check_writable(path, str(path))
    return OutputTarget(path, builtin or "jsonl")


def check_writable(path: Path, given: str) -> None:
    """The file can be created or replaced; SettingsError naming ``-o given`` and why not.

    Tried for real (create and remove, or open for appending) rather than judged from
    permission bits, which say nothing about read-only mounts, ACLs or root.
    """
    path = path.resolve()  # through a symlink, dangling ones included: the file it points at is written
    if path.is_dir():
        raise SettingsError(f"-o {given}: is a directory")
    if not path.parent.is_dir():
        raise SettingsError(f"-o {given}: directory {path.parent} does not exist")
    try:
        if path.exists():
            with path.open("a", encoding="utf-8"):
                pass
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
    except OSError as exc:
        raise SettingsError(f"-o {given}: cannot be written: {exc.strerror or exc}") from None


def write_report(report: SweepReport, path: str | Path, fmt: str | None = None) -> Path:
    """Render ``report`` into ``path`` in ``fmt`` (default: by extension, as ``-o`` does).

    Raises SettingsError for an extension with no format, ReporterError when the file cannot be
    written. Returns the path written.
    """
    target = Path(path)
    fmt = fmt or format_for_path(target)
    writer_for(fmt)  # an unknown format is bad input: found before the file is touched
    try:
        with target.open("w", encoding="utf-8") as out:  # case by case: a big report is never whole in memory
            write_rendered(report, fmt, masking(out))  # values read from secret env vars never reach a file
    except OSError as exc:
        raise ReporterError(f"{target}: cannot write the report: {exc.strerror or exc}") from exc
    return target


def write_document(path: Path, text: str) -> Path:
    """Write a rendered report; ReporterError (exit 3) naming the file when the disk says no."""
    try:
        path.write_text(redact(text), encoding="utf-8")
    except OSError as exc:
        raise ReporterError(f"{path}: cannot write the report: {exc.strerror or exc}") from exc
    return path


def keeps_run_details(targets: Sequence[OutputTarget]) -> bool:
    """Whether any output shows kept runs (otherwise none are kept: flat memory)."""
    return any(t.format not in NO_RUN_DETAILS for t in targets)


__all__ = [
    "NO_RUN_DETAILS",
    "OutputSpec",
    "OutputTarget",
    "check_writable",
    "default_output_path",
    "keeps_run_details",
    "plan_outputs",
    "write_document",
    "write_report",
]
