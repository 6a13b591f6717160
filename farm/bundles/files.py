"""The files of a bundle's root: what ``git ls-files`` lists in a work tree (tracked and untracked,
``.gitignore`` respected by git itself), else a walk that reads each directory's ``.gitignore``;
then ``.farmignore`` (at the root, gitignore's syntax less ``!``) and the defaults below.

Secrets stay out: environment files (``.env``, ``.env.*``) and secret-looking ones (``SECRET_FILES``:
``.ssh/``, ``.aws/``, ``.netrc``, ``*.pem``, ``id_rsa*``...) are never packed, whatever the ignore
files say, nor what a symbolic link out of the root points at; values of the environment never
enter a bundle at all (they resolve on the workers).
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ALWAYS_IGNORED", "SECRET_FILES", "IgnoreRules", "root_files"]

SECRET_FILES = (".ssh/", ".aws/", ".gnupg/", ".docker/", ".netrc", ".envrc", ".pypirc", ".git-credentials", "*.pem",
                "*.key", "id_rsa*", "id_ed25519*")
"""Secret-looking files and directories: never packed, whatever git or the ignore files say."""
ALWAYS_IGNORED = (".git/", ".hg/", ".svn/", "__pycache__/", "*.pyc", "*.pyo", ".venv/", "venv/", ".tox/", ".nox/",
                  ".mypy_cache/", ".pytest_cache/", ".ruff_cache/", "node_modules/", "*.egg-info/", ".env", ".env.*",
                  ".DS_Store", *SECRET_FILES)
"""Never packed: version-control data, caches, virtual environments and third-party packages
(workers install those: ``deploy/agent-requirements.txt``), environment files, secrets (``SECRET_FILES``)."""


@dataclass
class IgnoreRules:
    """Gitignore-style patterns relative to ``base`` (no ``!``): ``name`` matches a file or directory
    of that name anywhere, ``dir/`` directories only, ``/x`` or ``a/b`` a path from ``base``."""

    base: str = ""
    """Where the patterns apply, relative to the root ('' the root itself)."""
    patterns: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, path: Path, base: str = "") -> IgnoreRules:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return cls(base)
        return cls(base, [line.strip() for line in lines if line.strip() and not line.lstrip().startswith(("#", "!"))])

    def ignores(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` (relative to the root, ``/``-separated) is ignored by these patterns."""
        if self.base:
            if not rel.startswith(self.base + "/"):
                return False
            rel = rel[len(self.base) + 1:]
        return any(_matches(pattern, rel, is_dir) for pattern in self.patterns)


def _matches(pattern: str, rel: str, is_dir: bool) -> bool:
    if pattern.endswith("/"):
        if not is_dir:
            return False
        pattern = pattern.rstrip("/")
    if "/" in pattern.lstrip("/").rstrip("/") or pattern.startswith("/"):
        return fnmatch.fnmatchcase(rel, pattern.lstrip("/"))
    return fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], pattern)


_DEFAULTS = IgnoreRules("", list(ALWAYS_IGNORED))


def _ignored(rel: str, is_dir: bool, rules: Iterable[IgnoreRules]) -> bool:
    """Whether ``rel`` or a directory above it is ignored."""
    parts = rel.split("/")
    for n in range(1, len(parts) + 1):
        head, head_is_dir = "/".join(parts[:n]), is_dir or n < len(parts)
        if any(r.ignores(head, head_is_dir) for r in rules):
            return True
    return False


def root_files(root: Path) -> Iterator[tuple[str, Path]]:
    """Each file of ``root`` to pack: (path relative to the root with ``/``, its path), in sorted order."""
    farm_rules = [_DEFAULTS, IgnoreRules.read(root / ".farmignore")]
    listed: Iterable[str] | None = _git_files(root)
    resolved_root = root.resolve()
    for rel in sorted(set(_walk(root, farm_rules) if listed is None else listed)):
        path = root / rel
        if path.is_file() and not _ignored(rel, False, farm_rules) and _inside(path, resolved_root):
            yield rel, path


def _inside(path: Path, root: Path) -> bool:
    """A file, or a link to one, within ``root``: a link out of the project (to a key, say) is not packed."""
    return not path.is_symlink() or root in path.resolve().parents


def _git_files(root: Path) -> list[str] | None:
    """What git lists under ``root`` (None outside a work tree, or without git)."""
    git = shutil.which("git")
    if git is None or not _in_work_tree(root):
        return None
    done = subprocess.run([git, "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                          capture_output=True, check=False)
    if done.returncode != 0:
        return None
    return [name for name in done.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


def _in_work_tree(root: Path) -> bool:
    return any((parent / ".git").exists() for parent in (root, *root.parents))


def _walk(root: Path, farm_rules: list[IgnoreRules]) -> Iterator[str]:
    """The files under ``root``, directories ignored by a ``.gitignore`` on the way (or the rules) skipped."""
    git_rules: list[IgnoreRules] = []
    for directory, dirs, files in os.walk(root):
        here = Path(directory)
        rel_dir = here.relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        if (here / ".gitignore").is_file():
            git_rules.append(IgnoreRules.read(here / ".gitignore", rel_dir))
        rules = [*farm_rules, *git_rules]
        prefix = f"{rel_dir}/" if rel_dir else ""
        dirs[:] = sorted(d for d in dirs if not _ignored(prefix + d, True, rules) and not (here / d).is_symlink())
        yield from (prefix + name for name in files if not _ignored(prefix + name, False, rules))
