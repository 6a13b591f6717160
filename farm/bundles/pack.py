"""A bundle's archive: the files of its roots in one deterministic gzipped tar, named by its sha256.

The same files make the same bytes (sorted names, no times, owners or other modes than 0644/0755):
a sweep submitted twice from an unchanged tree stores nothing new. ``--bundle-max`` caps the bytes
of the files packed; over it, ``BundleTooLarge`` (exit 2) names the largest.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from farm.agents.repo_commit import repo_commit
from farm.bundles.files import root_files
from farm.errors import InputError
from farm.models.bundle import BundleRef

__all__ = ["DEFAULT_BUNDLE_MAX", "Bundle", "BundleRootRefused", "BundleTooLarge", "pack"]

DEFAULT_BUNDLE_MAX = 50_000_000
"""``--bundle-max``'s default: 50 MB of files."""
LARGEST_NAMED = 5


class BundleTooLarge(InputError):
    """The files to pack are over ``--bundle-max`` (exit 2)."""


class BundleRootRefused(InputError):
    """A root too broad to pack: the home directory, ``/``, the temporary directory, a parent of home (exit 2)."""


@dataclass(frozen=True)
class Bundle:
    """A packed bundle: its reference (on the plan) and its bytes (stored once in the store)."""

    ref: BundleRef
    data: bytes


def pack(roots: list[Path], *, max_bytes: int = DEFAULT_BUNDLE_MAX) -> Bundle:
    """Pack the files of ``roots`` (root ``i`` under ``i/<its name>/``: ``BundleRef.place``);
    BundleTooLarge over ``max_bytes``; BundleRootRefused for a root too broad to pack (``refuse_broad``)."""
    refuse_broad(roots)
    places = BundleRef("", tuple(str(r) for r in roots))
    files = [(f"{places.place(n)}/{rel}", path) for n, root in enumerate(roots) for rel, path in root_files(root)]
    sizes = {name: path.stat().st_size for name, path in files}
    total = sum(sizes.values())
    if total > max_bytes:
        raise BundleTooLarge(_too_large(roots, files, sizes, total, max_bytes))
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, path in files:
            info = tarfile.TarInfo(name)
            info.size, info.mode = sizes[name], 0o755 if os.access(path, os.X_OK) else 0o644
            with path.open("rb") as stream:
                tar.addfile(info, stream)
    data = gzip.compress(raw.getvalue(), compresslevel=6, mtime=0)
    ref = BundleRef(hashlib.sha256(data).hexdigest(), tuple(str(r) for r in roots), size=len(data),
                    files=len(files), content_bytes=total,
                    commits=tuple(repo_commit(root) or "" for root in roots))
    return Bundle(ref, data)


def refuse_broad(roots: list[Path]) -> None:
    """BundleRootRefused when a root is ``$HOME``, ``/``, the system temporary directory itself or a
    parent of ``$HOME``: a suite outside git, in one of those, would pack the whole directory."""
    home = Path.home().resolve()
    broad = {home, Path("/"), Path(tempfile.gettempdir()).resolve(), *home.parents}
    for root in roots:
        if root.resolve() in broad:
            raise BundleRootRefused(
                f"the sweep's bundle would pack {root} (the directory of a suite or agent outside git): too broad "
                "to carry (the home, temporary or root directory); move the suite into a project directory "
                "(its own, or a git work tree), or share the files with the workers (--no-bundle)")


def _too_large(roots: list[Path], files: list[tuple[str, Path]], sizes: dict[str, int], total: int,
               max_bytes: int) -> str:
    paths = dict(files)
    largest = sorted(sizes, key=lambda name: -sizes[name])[:LARGEST_NAMED]
    named = ", ".join(f"{paths[name]} ({_mb(sizes[name])})" for name in largest)
    where = ", ".join(str(r) for r in roots)
    return (f"the sweep's bundle would hold {_mb(total)} in {len(files):,} files of {where}: over --bundle-max "
            f"{_mb(max_bytes)}; the largest: {named}; leave them out with a .farmignore line, raise --bundle-max, "
            "or share the project with the workers (--no-bundle)")


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"
