"""What ``-i`` names: a suite file, a directory of suites, or a literal message (SPEC 3).

All files are loaded before anything fails, so one ``SuiteError`` lists every problem of
every file, duplicate case ids across the whole input included.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from farm.errors import InputError
from farm.models import Case, Message, Turn
from farm.suites.dynamic import LoadOptions
from farm.suites.stream import CaseStream

__all__ = [
    "PATH_SUFFIXES",
    "SUITE_SUFFIXES",
    "LoadedInput",
    "find_suite_files",
    "is_single_token",
    "load_files",
    "load_input",
    "load_message",
    "looks_like_path",
    "open_input",
    "open_message",
]

SUITE_SUFFIXES = (".jsonl", ".hocon", ".conf")


@dataclass
class LoadedInput:
    """The cases ``-i`` resolved to, and where they came from."""

    kind: Literal["file", "dir", "message"]
    root: Path | None
    """The ``-i`` root: the file's directory for a file, the directory itself for a directory."""
    cases: list[Case] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Files skipped in a directory sweep and connections not spoken, one line each, to show the user."""


PATH_SUFFIXES = (*SUITE_SUFFIXES, ".json")
"""An ``-i`` value ending in one of these is a path, never a message (SPEC 10)."""


def looks_like_path(arg: str) -> bool:
    """SPEC 10: a path separator, a suite or ``.json`` extension, or a leading ``.`` or ``~``.

    Such a value is always a path: a mistyped suite must fail, not be sent to the agent as a
    message and pass (Yao sends it; we refuse). ``-m/--message`` says "message" explicitly.
    """
    text = arg.strip()
    separators = {"/", os.sep, os.altsep or "/"}
    return (any(sep in text for sep in separators) or text.lower().endswith(PATH_SUFFIXES)
            or text.startswith((".", "~")))


def load_input(arg: str, *, cwd: Path | None = None, options: LoadOptions | None = None) -> LoadedInput:
    """Load what ``-i`` names (``open_input``), every case held.

    Raises:
        InputError: a path that does not exist, a file that is not a suite, a directory without
            suites, an empty input.
        SuiteError: the suites have problems (all of them are listed).
    """
    stream = open_input(arg, cwd=cwd, options=options)
    cases = list(stream)
    stream.check()
    return LoadedInput(stream.kind, stream.root, cases, stream.files, stream.notes)


def open_input(arg: str, *, cwd: Path | None = None, options: LoadOptions | None = None) -> CaseStream:
    """What ``-i`` names: a suite file, a directory of suites, or (when it cannot be a path) a
    literal message; its cases are read as the stream is iterated.

    Raises:
        InputError: a path that does not exist, a file that is not a suite, a directory without
            suites, an empty input.
    """
    if not isinstance(arg, str) or not arg.strip():
        raise InputError("empty input: give a suite file (.jsonl, .hocon, .conf), a directory, or -m MESSAGE")
    path = _as_path(arg, cwd)
    if path is not None and path.is_dir():
        files = find_suite_files(path)
        if not files:
            raise InputError(f"{arg}: no suite files (*.jsonl, *.hocon, *.conf) in this directory")
        return CaseStream("dir", path, files, options=options, notes=[])
    if path is not None and path.is_file():
        _check_suite_name(arg, path)
        return CaseStream("file", path.parent, [path], single=True, options=options)
    if looks_like_path(arg):
        raise InputError(f"{arg}: no such file or directory (to send it to the agent as a message, use -m)")
    if is_single_token(arg) and not (options is not None and options.yao_compat):
        raise InputError(f"{arg.strip()}: no such file or directory (to send it to the agent as a message, use -m)")
    return open_message(arg, cwd=cwd)


def is_single_token(arg: str) -> bool:
    """No whitespace: a mistyped suite name far more often than a message (SPEC 20; Yao sends it)."""
    return len(arg.split()) == 1


def load_message(text: str, *, cwd: Path | None = None) -> LoadedInput:
    """Direct message mode (``-m TEXT``, or an ``-i`` value that cannot be a path)."""
    stream = open_message(text, cwd=cwd)
    return LoadedInput(stream.kind, None, list(stream), [])


def open_message(text: str, *, cwd: Path | None = None) -> CaseStream:
    """Direct message mode as a stream of its one case."""
    if not text.strip():
        raise InputError("empty message: -m needs the text to send to the agent")
    return CaseStream("message", None, [], cases=[message_case(text, cwd)])


def _check_suite_name(arg: str, path: Path) -> None:
    name = path.name.lower()
    if not name.endswith(SUITE_SUFFIXES):
        raise InputError(f"{arg}: not a suite file (expected .jsonl, .hocon or .conf)")
    if name in SUITE_SUFFIXES:  # ".hocon": Path(".hocon").suffix is '', and a case id needs a name
        raise InputError(f"{arg}: the file has an extension but no name: a case id comes from the name before "
                         f"{path.name} (rename it, e.g. case{path.name})")


def _as_path(arg: str, cwd: Path | None) -> Path | None:
    """The path ``arg`` would be, or None when it cannot be one (too long, NUL byte, …)."""
    try:
        path = Path(arg).expanduser()
        path = path if cwd is None else cwd / path
        path.exists()
    except (OSError, ValueError):
        return None
    return path


def message_case(text: str, cwd: Path | None = None) -> Case:
    """Direct message mode: one case, id ``message``, one turn with one user message."""
    return Case(
        id="message",
        format="message",
        suite="message",
        base_dir=str((cwd or Path.cwd()).resolve()),
        turns=[Turn(messages=[Message(role="user", content=text)])],
        input=text,
    )


def find_suite_files(root: Path) -> list[Path]:
    """Every suite file under ``root``, sorted; hidden entries and ``output-*.jsonl`` skipped.

    Files whose name starts with ``_`` are skipped too: that is where shared HOCON ``include``
    files live (``_common.conf``), which are not test cases of their own.
    """
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in filenames:
            lower = name.lower()
            if name.startswith((".", "_")) or not lower.endswith(SUITE_SUFFIXES):
                continue
            if lower.startswith("output-") and lower.endswith(".jsonl"):
                continue  # the farm's own result files live beside the suites
            found.append(Path(dirpath) / name)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def load_files(files: list[Path], root: Path, *, single: bool, options: LoadOptions | None = None,
               notes: list[str] | None = None) -> list[Case]:
    """Load every file; raise one ``SuiteError`` with all problems, duplicate ids included.

    With ``notes``, HOCON files that are not test cases are skipped with a note (directory sweeps).
    """
    stream = CaseStream("dir", root, files, single=single, options=options, notes=notes)
    cases = list(stream)
    stream.check()
    if notes is not None:
        notes[:] = stream.notes
    return cases
