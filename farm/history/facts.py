"""What a sweep records besides its results: tags, git checkout, suite files, settings.

The submitter gathers these before the sweep starts and puts them in the plan's envelope
(``HistoryRecord``, written as keys of the report's metadata), so they travel inside the report
to whoever records it (the submitter, or the worker running ``farm.report`` for a detached or
nightly sweep). Nothing secret goes in: no broker or database URL, no connector key.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.errors import SettingsError
from farm.models.envelope import HistoryRecord, Recorder

NIGHTLY_TAG = ("trigger", "nightly")
"""The tag ``farm.nightly`` puts on its sweeps; the worker recording a sweep runs the nightly loop on it."""

TAG_KEY = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
GIT_TIMEOUT_S = 5.0

RECORDED_SETTINGS = ("runs", "min_pass_rate", "parallel", "timeout_s", "fail_fast", "pattern", "name", "connector",
                     "judge", "queue", "neuro_san_compat", "user", "team", "detach", "confirm_failures")
"""``farm test`` settings kept with a sweep (never the broker URL: it may hold a password)."""


def parse_tags(values: Iterable[str]) -> dict[str, str]:
    """``--tag KEY=VALUE`` flags as a dict; a later flag wins for the same key."""
    tags: dict[str, str] = {}
    for value in values:
        key, sep, tag_value = value.partition("=")
        key = key.strip()
        if not sep or not TAG_KEY.match(key):
            raise SettingsError(f"--tag {value!r}: expected KEY=VALUE, KEY of letters, digits, '_', '.', '-'")
        tags[key] = tag_value.strip()
    return tags


def tag_argument(tag: tuple[str, str]) -> str:
    """``KEY=VALUE``, as ``--tag`` takes it."""
    return f"{tag[0]}={tag[1]}"


def _git(directory: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):  # no git, or it hangs: no git facts, not an error
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def git_facts(directory: Path) -> dict[str, str]:
    """``{"commit", "branch"}`` of the checkout holding ``directory``; empty outside a checkout."""
    commit = _git(directory, "rev-parse", "HEAD")
    if commit is None:
        return {}
    branch = _git(directory, "rev-parse", "--abbrev-ref", "HEAD")
    return {"commit": commit, "branch": branch} if branch and branch != "HEAD" else {"commit": commit}


def suite_hashes(files: Sequence[Path], root: Path | None) -> dict[str, str]:
    """SHA-256 of every suite file, keyed by its path relative to the ``-i`` root."""
    hashes = {}
    for path in files:
        try:
            name = str(path.relative_to(root)) if root is not None else str(path)
        except ValueError:
            name = str(path)
        hashes[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


@dataclass(frozen=True)
class HistoryFacts:
    """What the history keeps of a sweep's flags (``farm.api.resolve_specs`` reads them once)."""

    runs: int | None = None
    min_pass_rate: float = 1.0
    parallel: int = 8
    timeout_s: float | None = None
    fail_fast: bool = False
    name: str | None = None
    connector: str | None = None
    judge: str | None = None
    queue: str = "farm"
    neuro_san_compat: bool = False
    user: str | None = None
    team: str | None = None
    detach: bool = False
    distributed: bool = False
    """``--broker`` was given (the URL itself is never kept)."""
    confirm_failures: int = 1
    """``--confirm-failures K`` (SPEC 23): a judged failure is judged K times, the majority stands."""
    cwd: Path = Path(".")
    """Where ``farm test`` ran: the git checkout of a ``-m`` sweep (a suite's is its root's)."""


def recorded_settings(facts: HistoryFacts) -> dict[str, Any]:
    """The settings kept with a sweep, plus whether it ran distributed. ``pattern`` names no flag
    of today's ``farm test`` (``-k`` is ``patterns``): it is kept as None, as it was recorded, so
    the history's rows keep one shape."""
    kept = {name: getattr(facts, name, None) for name in RECORDED_SETTINGS}
    kept["distributed"] = facts.distributed
    return kept


def sweep_facts(*, facts: HistoryFacts, files: Sequence[Path], root: Path | None, tags: dict[str, str],
                pass_k: Sequence[int], recorder: Recorder, journal: str | None = None) -> HistoryRecord:
    """What a sweep carries for its history (``recorder``: ``submitter``, ``worker`` or ``off``;
    ``journal``: where ``farm test`` journals it)."""
    checkout = root if root is not None else facts.cwd
    record = HistoryRecord(tags=dict(tags), git=git_facts(checkout), suites=suite_hashes(files, root),
                           settings=recorded_settings(facts), pass_k=sorted(set(pass_k)), recorder=recorder)
    return record if journal is None else record.model_copy(update={"journal": journal})
