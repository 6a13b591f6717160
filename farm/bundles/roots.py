"""Which directories a sweep's bundle holds: the project roots of what the sweep names.

Each path the sweep names (the ``-i`` suites, the ``-n`` agent's file or directory, the agents and
connectors directories, and the directory an agent reference naming a file resolves from: ``refs_paths``)
belongs to the git work tree that holds it (its top level) or, outside
git, to its own directory: a directory itself, a file's directory, a ``py:`` module's topmost
package's parent (so the module travels with its package). Roots inside another root merge into
it. A path named nowhere under a root (an absolute one a case names on its own) is not carried:
the worker looks for it where the plan says.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path

__all__ = ["agent_paths", "project_roots", "refs_paths"]


def project_roots(paths: Iterable[Path]) -> list[Path]:
    """The roots holding ``paths`` (existing ones only), outermost first, none inside another."""
    found = sorted({_project_of(p.resolve()) for p in paths if p.exists()}, key=lambda p: (len(p.parts), str(p)))
    roots: list[Path] = []
    for candidate in found:
        if not any(candidate == r or r in candidate.parents for r in roots):
            roots.append(candidate)
    return sorted(roots)


def _project_of(path: Path) -> Path:
    start = path if path.is_dir() else path.parent
    for parent in (start, *start.parents):
        if (parent / ".git").exists():
            return parent
    if path.suffix == ".py":
        while (start / "__init__.py").is_file() and start.parent != start:
            start = start.parent
    return start


def refs_paths(refs: Iterable[str | None], cwd: Path) -> list[Path]:
    """The files agent references name (``agent_paths``) and, when they name any, ``cwd`` itself: the
    directory a relative reference resolves from (its ``base_dir``) must be under a root too, or a
    worker would look for the agent where the submitter's tree is (``py:agents/a.py`` outside git
    would otherwise make ``<cwd>/agents`` the root and leave ``<cwd>`` unmoved)."""
    named = [(path, _relative(ref, cwd)) for ref in refs for path in agent_paths(ref, cwd)]
    return [*(path for path, _ in named), *([cwd] if any(relative for _, relative in named) else [])]


def _relative(ref: str | None, cwd: Path) -> bool:
    """Whether ``ref`` names its file by a path relative to the directory it resolves from."""
    if not ref:
        return False
    if ref.startswith("py:"):
        return not Path(ref[3:].rpartition(":")[0] or ref[3:]).expanduser().is_absolute()
    if ref.startswith("cmd:"):
        try:
            return any(not Path(word).is_absolute() and _in_tree(cwd / word, cwd)
                       for word in shlex.split(ref[4:]) if not word.startswith("-"))
        except ValueError:
            return False
    return not Path(ref).is_absolute()


def agent_paths(ref: str | None, cwd: Path) -> list[Path]:
    """The files an agent reference (``-n``) names: a ``py:`` file, a ``cmd:`` program or script in
    the tree (each word of the command that is a file under ``cwd``: an interpreter or a program
    elsewhere is the workers' own), a directory (a manifest agent's)."""
    if not ref:
        return []
    if ref.startswith("py:"):
        target = ref[3:].rpartition(":")[0] or ref[3:]
        path = Path(target) if target.endswith(".py") else Path(*target.split("."))
        return [p for p in (cwd / path, (cwd / path).with_suffix(".py"), cwd / path / "__init__.py") if p.is_file()][:1]
    if ref.startswith("cmd:"):
        try:
            words = shlex.split(ref[4:])
        except ValueError:
            return []
        return [cwd / word for word in words if not word.startswith("-") and _in_tree(cwd / word, cwd)]
    return [cwd / ref] if (cwd / ref).is_dir() else []


def _in_tree(path: Path, cwd: Path) -> bool:
    return path.is_file() and cwd.resolve() in path.resolve().parents
