"""A worker's copy of a bundle: verified against its sha256 and unpacked once into
``<data dir>/bundles/<sha256>/`` (into a temporary directory renamed in place, so a copy that is
there is whole; processes of one worker host share it). Never a path outside it: the archive is
read with tarfile's ``data`` filter (no absolute names, no ``..``, no links out, no devices).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from farm.agents.repo_commit import BUNDLE_MARKER
from farm.bundles.ref import BundleRef
from farm.errors import FarmRuntimeError

__all__ = ["BundleError", "bundle_dir", "unpacked"]

_lock = threading.Lock()
_DONE = BUNDLE_MARKER
"""Written last into a copy: its sha256 and its roots' commits (``farm.agents.repo_commit``)."""


class BundleError(FarmRuntimeError):
    """A bundle a worker cannot use: gone from the store, or not the bytes its hash names."""


def bundle_dir(data_dir: Path, ref: BundleRef) -> Path:
    return data_dir / "bundles" / ref.sha256


def unpacked(data_dir: Path, ref: BundleRef, fetch: Callable[[], bytes | None], *,
             keep_s: float | None = None) -> Path:
    """The directory of ``ref``'s copy on this host, fetched (``fetch``), verified and unpacked the
    first time. BundleError when the store has it no more or its bytes are not its hash's.

    Each call marks the copy used (its marker's time); ``keep_s``: unpacking a new copy removes the
    others unused that long (a long-running worker meets a new bundle with every edit)."""
    target = bundle_dir(data_dir, ref)
    with _lock:
        if (target / _DONE).is_file():
            os.utime(target / _DONE)
            return target
        data = fetch()
        if data is None:
            raise BundleError(f"bundle {ref.short} is gone from the store (expired with its sweep?)")
        digest = hashlib.sha256(data).hexdigest()
        if digest != ref.sha256:
            raise BundleError(f"bundle {ref.short}: the stored bytes hash to {digest[:16]}: refused")
        temporary = target.parent / f".{ref.sha256}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        temporary.mkdir(parents=True)
        try:
            with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data)), mode="r:") as tar:
                tar.extractall(temporary, filter="data")
            for n in range(len(ref.roots)):  # a root with no file is still a directory
                (temporary / ref.place(n)).mkdir(parents=True, exist_ok=True)
            marker = {"sha256": ref.sha256, "commits": list(ref.commits)}
            (temporary / _DONE).write_text(json.dumps(marker), encoding="utf-8")
            try:
                temporary.rename(target)
            except OSError:  # another process of this host was first: its copy is the same
                if not (target / _DONE).is_file():
                    raise
        finally:
            shutil.rmtree(temporary, ignore_errors=True)
        if keep_s is not None:
            _prune(target.parent, keep_s, keep=target)
    return target


def _prune(directory: Path, keep_s: float, keep: Path) -> None:
    """Remove the copies (and half-made ones) under ``directory`` unused for ``keep_s`` seconds."""
    horizon = time.time() - keep_s
    for copy in directory.iterdir():
        if copy == keep:
            continue
        marker = copy / _DONE
        try:
            used = (marker if marker.is_file() else copy).stat().st_mtime
        except OSError:
            continue
        if used < horizon:
            shutil.rmtree(copy, ignore_errors=True)
