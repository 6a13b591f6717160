"""A worker's copy of a bundle: verified against its sha256 and unpacked once into
``<data dir>/bundles/<sha256>/`` (into a temporary directory renamed in place, so a copy that is
there is whole; processes of one worker host share it). Never a path outside it: the archive is
read with tarfile's ``data`` filter (no absolute names, no ``..``, no links out, no devices), holds
regular files and directories only, and inflates to no more than its files' bytes (and headers).
Whatever stops an unpack is a ``BundleError`` naming the bundle.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import tarfile
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path

from farm.agents.repo_commit import BUNDLE_MARKER
from farm.errors import FarmRuntimeError
from farm.models.bundle import BundleRef

__all__ = ["BundleError", "bundle_dir", "unpacked"]

_lock = threading.Lock()
_DONE = BUNDLE_MARKER
"""Written last into a copy: its sha256 and its roots' commits (``farm.agents.repo_commit``)."""
_SHA256 = re.compile(r"[0-9a-f]{64}")
_PER_FILE = 4 * 512
"""Tar bytes per member beyond its content: its header, a PAX header (a long name) and padding."""
_SLACK = 1_048_576


class BundleError(FarmRuntimeError):
    """A bundle a worker cannot use: gone from the store, not the bytes its hash names, or not
    unpackable here (a full or read-only disk, a bad archive, a member that is not a plain file)."""


def bundle_dir(data_dir: Path, ref: BundleRef) -> Path:
    return data_dir / "bundles" / ref.sha256


def unpacked(data_dir: Path, ref: BundleRef, fetch: Callable[[], bytes | None], *,
             keep_s: float | None = None) -> Path:
    """The directory of ``ref``'s copy on this host, fetched (``fetch``), verified and unpacked the
    first time. BundleError when the store has it no more or its bytes are not its hash's.

    Each call marks the copy used (its marker's time); ``keep_s``: unpacking a new copy removes the
    others unused that long (a long-running worker meets a new bundle with every edit)."""
    if not _SHA256.fullmatch(ref.sha256):
        raise BundleError(f"bundle {ref.sha256[:16]!r}: not a sha256 (64 lowercase hex digits): refused")
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
        try:
            _unpack(data, ref, target)
        except (OSError, EOFError, zlib.error, tarfile.TarError) as exc:  # disk full, bad gzip, a hostile member
            raise BundleError(f"bundle {ref.short} cannot be unpacked into {target.parent}: "
                              f"{type(exc).__name__}: {exc}") from exc
        if keep_s is not None:
            _prune(target.parent, keep_s, keep=target)
    return target


def _unpack(data: bytes, ref: BundleRef, target: Path) -> None:
    """Unpack ``data`` into a temporary directory renamed ``target``: regular files and directories
    only, no more bytes than the ref's files and their tar headers (``_limit``)."""
    temporary = target.parent / f".{ref.sha256}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    temporary.mkdir(parents=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(_decompress(data, _limit(ref), ref)), mode="r:") as tar:
            members = tar.getmembers()
            odd = [m.name for m in members if not (m.isreg() or m.isdir())]
            if odd:
                raise BundleError(f"bundle {ref.short} holds {odd[0]!r}, neither a file nor a directory: refused")
            tar.extractall(temporary, members=members, filter="data")
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


def _limit(ref: BundleRef) -> int:
    """The most bytes the tar of ``ref`` may hold: its files' bytes, headers and padding, and slack."""
    return ref.content_bytes + (ref.files + 1) * _PER_FILE + _SLACK


def _decompress(data: bytes, limit: int, ref: BundleRef) -> bytes:
    """``data`` gunzipped, BundleError past ``limit`` bytes (a bomb is not inflated further)."""
    inflater = zlib.decompressobj(wbits=31)
    raw = inflater.decompress(data, limit + 1)
    if len(raw) > limit or inflater.unconsumed_tail:
        raise BundleError(f"bundle {ref.short} inflates past {limit:,} bytes, more than its files: refused")
    if not inflater.eof:
        raise BundleError(f"bundle {ref.short}: its gzip stream is cut short: refused")
    return raw


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
