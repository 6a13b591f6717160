"""``BundleRef``: the plan's typed field naming the bundle its workers run from (SPEC 24)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

__all__ = ["BundleRef"]


@dataclass(frozen=True)
class BundleRef:
    """A bundle stored once in the store under its sha256; its roots as the submitter saw them.

    Root ``i`` is packed under the archive's directory ``i/<its name>/`` (``place``): a worker maps
    each root (a path the plan names, such as a case's ``base_dir``) to that directory of its copy,
    so a directory keeps its name (a manifest agent's directory names the agent).
    """

    sha256: str
    roots: tuple[str, ...]
    """The submitter's project roots (absolute), in archive order."""
    size: int = 0
    """Bytes of the archive (compressed)."""
    files: int = 0
    content_bytes: int = 0
    """Bytes of the files it holds (what ``--bundle-max`` caps)."""
    commits: tuple[str, ...] = ()
    """The git commit each root stood at when packed ('' outside git): what ``served.commit``
    names for a ``py:``/``cmd:`` agent run from the bundle (SPEC 25), as it would from the tree."""

    def place(self, n: int) -> str:
        """Where root ``n`` is in the archive and in a copy: ``n/<its name>``."""
        return f"{n}/{PurePosixPath(self.roots[n]).name or 'root'}"

    @property
    def short(self) -> str:
        """The first 16 hex digits: how module names and messages name the bundle."""
        return self.sha256[:16]
