"""The git commit a ``py:``/``cmd:`` agent's file was run at (SPEC 25's ``served.commit``), read
from the repository's files (``.git/HEAD``, the branch's ref or ``packed-refs``): no ``git``
process, once per agent. A dirty worktree still names its HEAD: the commit is where the code
stood, not a promise that it was unchanged.

In a worker's copy of a bundle (``farm.bundles``) there is no ``.git``: the commit is the one the
submitter's root stood at when the bundle was packed (``BundleRef.commits``, kept in the copy's
marker), and none for a root outside git, as in-process: a distributed sweep's report says what
the same sweep in-process says."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from farm.models import Served

_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def agent_served(path: Path) -> Served | None:
    """``Served(commit=…)`` for the repository holding ``path``; None outside one (or unreadable)."""
    commit = repo_commit(path.resolve().parent if path.is_file() else path.resolve())
    return None if commit is None else Served(commit=commit)


BUNDLE_MARKER = ".farm-bundle"
"""The file a bundle's copy holds at its top (``farm.bundles.unpack``): its sha256 and commits."""


@functools.lru_cache(maxsize=64)
def repo_commit(directory: Path) -> str | None:
    below = directory  # in a copy: <copy>/<root index>/<root name>/…
    for folder in (directory, *directory.parents):
        dot_git = folder / ".git"
        if dot_git.exists():
            try:
                return _head(_git_dir(dot_git))
            except (OSError, ValueError):
                return None
        if (folder / BUNDLE_MARKER).is_file():
            return _bundle_commit(folder / BUNDLE_MARKER, below.name)
        below = folder
    return None


def _bundle_commit(marker: Path, root: str) -> str | None:
    """The commit root ``root`` (its index) of a bundle's copy was packed at (None outside git)."""
    try:
        commits = json.loads(marker.read_text(encoding="utf-8")).get("commits") or []
        commit = commits[int(root)] if root.isdigit() and int(root) < len(commits) else ""
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return str(commit) or None


def _git_dir(dot_git: Path) -> Path:
    """``.git`` itself, or where a worktree's ``.git`` file points (``gitdir: …``)."""
    if dot_git.is_dir():
        return dot_git
    text = dot_git.read_text(encoding="utf-8").strip()
    if not text.startswith("gitdir:"):
        raise ValueError(f"{dot_git}: not a gitdir file")
    target = Path(text.partition(":")[2].strip())
    return target if target.is_absolute() else (dot_git.parent / target).resolve()


def _head(git_dir: Path) -> str | None:
    head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    if _SHA.fullmatch(head):
        return head  # detached
    ref = head.removeprefix("ref:").strip()
    common = git_dir
    if (git_dir / "commondir").is_file():  # a linked worktree: its branches live in the main repository
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    for where in (git_dir, common):
        if (where / ref).is_file():
            sha = (where / ref).read_text(encoding="utf-8").strip()
            return sha if _SHA.fullmatch(sha) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and _SHA.fullmatch(sha):
                return sha
    return None  # a branch with no commit yet
