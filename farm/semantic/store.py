"""Embeddings and a case's clusters kept on disk, across processes (issue 45).

A ``farm test`` is a fresh process: without this it loads the model (numpy, scipy.special,
tokenizers, the weights: ~0.3 s of CPU) to embed "good" and "bad" again, though the last sweep
embedded them already. Two append-only files in ``$FARM_DATA_DIR/semantic/``, named by a version
of the model's weights file and of the clustering's constants (another model or another cut reads
other files):

- ``embeddings-<version>.bin``: records of a text's key (16 bytes, ``text_key``) and its 384
  float32 (the model's very output: a row read back is equal to a row computed);
- ``labels-<version>.bin``: records of a case's key (16 bytes: a hash of its distinct answers'
  keys, in order), their number n (2 bytes) and n cluster labels (2 bytes each).

A process reads a file once, at its first look-up (of the embeddings only where each one starts:
a row is read when asked for); each write is one ``write`` of whole records in
append mode, so processes writing at once add records without mixing them (a record cut short by a
crash is ignored). Holding more than twice ``FARM_SEMANTIC_CACHE`` records, a file is rewritten
with the most recent ones. Pure Python: a case whose distinct answers and clusters are on disk
imports neither numpy nor the model. An OSError leaves the store out (a cache never fails a sweep):
all of it when reading, only the writes when writing.
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
from pathlib import Path

FORMAT = 1
_KEY = 16
_ROW = 384 * 4


def _version() -> str | None:
    """Names the files: the weights' and the tokenizer's files (size, time) and the code that turns
    a text into an embedding and embeddings into clusters (``minilm.py``, ``cluster.py``)."""
    from farm.semantic.embedder import model_folder

    folder = model_folder()
    if folder is None:
        return None
    seen = hashlib.blake2b(str(FORMAT).encode(), digest_size=6)
    for path in (folder / "model.safetensors", folder / "tokenizer.json"):
        status = path.stat()
        seen.update(f"{status.st_size} {status.st_mtime_ns};".encode())
    for name in ("minilm.py", "cluster.py"):
        seen.update(Path(__file__).with_name(name).read_bytes())
    return seen.hexdigest()


class DiskStore:
    """The two files of one folder; thread-safe; every method is a no-op once an OSError was met."""

    def __init__(self, folder: Path, limit: int) -> None:
        self.folder = folder
        self.limit = limit
        self._lock = threading.Lock()
        self._rows: dict[bytes, int] = {}
        """Where each embedding on disk starts in the file open at ``_reader`` (read when asked:
        the rows stay in the page cache, shared, not in each process's memory)."""
        self._reader: int | None = None
        self._written: set[bytes] = set()
        self._labels: dict[bytes, tuple[int, ...]] | None = None
        self._paths: tuple[Path, Path] | None = None
        self._broken = False
        self._read_only = False

    def has(self, key: bytes) -> bool:
        """Whether the embedding of the text whose key is ``key`` is on disk (nothing read)."""
        with self._lock:
            return self._load() and key in self._rows

    def row(self, key: bytes) -> bytes | None:
        """The float32 bytes of the embedding of the text whose key is ``key``, if on disk."""
        with self._lock:
            at = self._rows.get(key) if self._load() else None
            if at is None or self._reader is None:
                return None
            try:
                row = os.pread(self._reader, _ROW, at)
            except OSError:
                return None
            return row if len(row) == _ROW else None

    def labels(self, key: bytes) -> tuple[int, ...] | None:
        with self._lock:
            if self._load():
                assert self._labels is not None
                return self._labels.get(key)
            return None

    def keep_rows(self, rows: dict[bytes, bytes]) -> None:
        with self._lock:
            if not self._load() or self._paths is None:
                return
            new = {k: r for k, r in rows.items() if k not in self._rows and k not in self._written and len(r) == _ROW}
            if new:
                self._written.update(new)
                self._append(self._paths[0], b"".join(k + r for k, r in new.items()))

    def keep_labels(self, key: bytes, labels: tuple[int, ...]) -> None:
        with self._lock:
            if not self._load() or self._labels is None or key in self._labels or self._paths is None:
                return
            self._labels[key] = labels
            self._append(self._paths[1], key + struct.pack(f"<H{len(labels)}H", len(labels), *labels))

    def _load(self) -> bool:
        if self._broken:
            return False
        if self._paths is not None:
            return True
        try:
            version = _version()
            if version is None:
                self._broken = True
                return False
            self.folder.mkdir(parents=True, exist_ok=True)
            self._paths = (self.folder / f"embeddings-{version}.bin", self.folder / f"labels-{version}.bin")
            self._reader, self._rows = _read_rows(self._paths[0], self.limit)
            self._labels = _read_labels(self._paths[1], self.limit)
        except OSError:
            self._broken = True
            return False
        return True

    def _append(self, path: Path, data: bytes) -> None:
        if self._read_only:
            return
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(descriptor, data)
            finally:
                os.close(descriptor)
        except OSError:
            self._read_only = True  # what was read stays of use


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _read_rows(path: Path, limit: int) -> tuple[int | None, dict[bytes, int]]:
    """A descriptor open on the file of embeddings (None: no file yet), and where each row starts."""
    size = _KEY + _ROW
    try:
        reader = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None, {}
    with open(reader, "rb", closefd=False) as whole:
        data = whole.read()
    rows = {data[i:i + _KEY]: i + _KEY for i in range(0, len(data) - size + 1, size)}
    if len(rows) > 2 * limit or len(data) // size > 2 * limit:
        kept = list(rows.items())[-limit:]
        _rewrite(path, b"".join(k + data[at:at + _ROW] for k, at in kept))
        os.close(reader)
        reader = os.open(path, os.O_RDONLY)
        rows = {k: i * size + _KEY for i, (k, _) in enumerate(kept)}
    return reader, rows


def _read_labels(path: Path, limit: int) -> dict[bytes, tuple[int, ...]]:
    data, at, records = _read(path), 0, 0
    found: dict[bytes, tuple[int, ...]] = {}
    while at + _KEY + 2 <= len(data):
        (count,) = struct.unpack_from("<H", data, at + _KEY)
        end = at + _KEY + 2 + 2 * count
        if end > len(data):
            break  # cut short
        found[data[at:at + _KEY]] = struct.unpack_from(f"<{count}H", data, at + _KEY + 2)
        at, records = end, records + 1
    if records > 2 * limit:
        found = dict(list(found.items())[-limit:])
        _rewrite(path, b"".join(k + struct.pack(f"<H{len(v)}H", len(v), *v) for k, v in found.items()))
    return found


def _rewrite(path: Path, data: bytes) -> None:
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


_stores_lock = threading.Lock()
_stores: dict[tuple[Path, int], DiskStore] = {}
_by_setting: dict[tuple[str | None, str | None], DiskStore | None] = {}
"""The store of each (``FARM_DATA_DIR``, ``FARM_SEMANTIC_CACHE``) seen: asked per answer, read once."""


def disk_store() -> DiskStore | None:
    """The store of this process's ``FARM_DATA_DIR`` (None when ``FARM_SEMANTIC_CACHE`` is 0)."""
    setting = (os.environ.get("FARM_DATA_DIR"), os.environ.get("FARM_SEMANTIC_CACHE"))
    if setting in _by_setting:
        return _by_setting[setting]
    from farm.settings import data_dir, semantic_cache_entries

    limit = semantic_cache_entries()
    found: DiskStore | None = None
    if limit > 0:
        where = (data_dir() / "semantic", limit)
        with _stores_lock:
            found = _stores.get(where)
            if found is None:
                found = _stores[where] = DiskStore(*where)
    _by_setting[setting] = found
    return found


def _forget_locks() -> None:
    global _stores_lock
    _stores_lock = threading.Lock()
    for store in _stores.values():
        store._lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_locks)
