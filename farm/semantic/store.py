"""Embeddings and a case's clusters kept on disk, across processes (issue 45).

A ``farm test`` is a fresh process: without this it loads the model (numpy, tokenizers, the
weights and a forward pass: ~0.08 s of CPU) to embed "good" and "bad" again, though the last
sweep embedded them already. Two append-only files in ``$FARM_DATA_DIR/semantic/``, named by a
version of the model's weights file and of the clustering's constants (another model or another
cut reads other files):

- ``embeddings-<version>.bin``: records of a mark (4 bytes), a text's key (16 bytes), its 384
  float32 (the model's very output: a row read back is equal to a row computed) and a CRC-32 of
  key and row;
- ``labels-<version>.bin``: records of the mark, a case's key (16 bytes: a hash of its distinct
  answers' keys, in order), their number n (2 bytes), n cluster labels (2 bytes each, 0 to n) and
  a CRC-32;
- ``salt``: 16 random bytes, made once per folder: a key on disk is the in-memory key (a hash of
  the text) hashed with it, so the files hold no text nor a hash that a guess could be checked
  against elsewhere. The folder is 0700, its files 0600.

A process reads a file once, at its first look-up (of the embeddings only where each record
starts: a row is read when asked for, with its key and its CRC: a record not for the key asked, or
damaged, is a miss); each write is one ``write`` of whole records in append mode, so processes
writing at once add records without mixing them. A record cut short (a crash, a disk full: a short
write leaves the store read-only) is skipped: readers go on at the next mark. Holding more than
twice ``FARM_SEMANTIC_CACHE`` records, a file is rewritten with the most recent ones, when read, and
a process that appended that many since reading it reads it again (so neither the files nor what a
long-lived worker holds of them grow without bound). A reader keeps the descriptor of the file it
indexed (its own rewrite's included), not whatever another process's rewrite put in its place.
Pure Python: a case whose distinct answers and clusters are on disk imports neither numpy nor the
model. An OSError leaves the store out (a cache never fails a sweep): all of it when reading, only
the writes when writing.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import threading
import zlib
from pathlib import Path

FORMAT = 2
_KEY = 16
_ROW = 384 * 4
_MAGIC = b"\xf5\xe3\x1a\x5c"
"""Starts every record: a reader finds the next record past one cut short or damaged."""
_CHECK = 4
_RECORD = len(_MAGIC) + _KEY + _ROW + _CHECK
_SALT = 16


def _version() -> str | None:
    """Names the files: the weights' and the tokenizer's files (size, time) and the code that turns
    a text into an embedding and embeddings into clusters (``minilm.py``, ``cluster.py``)."""
    from farm.semantic.weights import model_folder

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
        """Where each embedding's record on disk starts in the file open at ``_reader`` (read when
        asked: the rows stay in the page cache, shared, not in each process's memory)."""
        self._reader: int | None = None
        self._written: set[bytes] = set()
        self._labels: dict[bytes, tuple[int, ...]] = {}
        self._appended = [0, 0]
        """Records of embeddings and of labels this process appended since it last read the files."""
        self._paths: tuple[Path, Path] | None = None
        self._salt = b""
        self._broken = False
        self._read_only = False

    def _key(self, key: bytes) -> bytes:
        """The key on disk of an in-memory key (a text's hash): salted by the folder's own salt."""
        return hashlib.blake2b(key, digest_size=_KEY, key=self._salt).digest()

    def has(self, key: bytes) -> bool:
        """Whether the embedding of the text whose key is ``key`` is on disk (nothing read)."""
        with self._lock:
            return self._load() and self._key(key) in self._rows

    def row(self, key: bytes) -> bytes | None:
        """The float32 bytes of the embedding of the text whose key is ``key``, if on disk: its
        record is read whole, and one not for this key or damaged is a miss."""
        with self._lock:
            if not self._load():
                return None
            salted = self._key(key)
            at = self._rows.get(salted)
            if at is None or self._reader is None:
                return None
            try:
                record = os.pread(self._reader, _RECORD, at)
            except OSError:
                return None
            return _row_of(record, salted)

    def labels(self, key: bytes) -> tuple[int, ...] | None:
        with self._lock:
            return self._labels.get(self._key(key)) if self._load() else None

    def keep_rows(self, rows: dict[bytes, bytes]) -> None:
        with self._lock:
            if not self._load() or self._paths is None:
                return
            salted = {self._key(k): r for k, r in rows.items() if len(r) == _ROW}
            new = {k: r for k, r in salted.items() if k not in self._rows and k not in self._written}
            if new:
                self._written.update(new)
                self._append(self._paths[0], b"".join(_row_record(k, r) for k, r in new.items()), 0, len(new))

    def keep_labels(self, key: bytes, labels: tuple[int, ...]) -> None:
        with self._lock:
            salted = self._key(key) if self._load() else b""
            if self._paths is None or not salted or salted in self._labels or not _valid(labels):
                return
            self._labels[salted] = labels
            self._append(self._paths[1], _labels_record(salted, labels), 1, 1)

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
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.folder.chmod(0o700)
            self._salt = _salt(self.folder / "salt")
            self._paths = (self.folder / f"embeddings-{version}.bin", self.folder / f"labels-{version}.bin")
            self._read_files()
        except OSError:
            self._broken = True
            return False
        return True

    def _read_files(self) -> None:
        """(Re)reads both files, rewriting one past twice the limit: what this process appended
        since is in them now."""
        assert self._paths is not None
        if self._reader is not None:
            os.close(self._reader)
            self._reader = None
        self._reader, self._rows = _read_rows(self._paths[0], self.limit)
        self._labels = _read_labels(self._paths[1], self.limit)
        self._written.clear()
        self._appended = [0, 0]

    def _append(self, path: Path, data: bytes, which: int, records: int) -> None:
        if self._read_only:
            return
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                written = os.write(descriptor, data)
            finally:
                os.close(descriptor)
            if written != len(data):  # a disk full: readers skip the record cut short
                self._read_only = True
        except OSError:
            self._read_only = True  # what was read stays of use
            return
        self._appended[which] += records
        if max(len(self._rows) + self._appended[0], len(self._labels)) > 2 * self.limit:
            try:  # a long-lived process: the files, and what it holds of them, stay bounded
                self._read_files()
            except OSError:
                self._broken = True


def _salt(path: Path) -> bytes:
    """The folder's random salt, created once: written aside, then linked in place (never half-read)."""
    try:
        salt = path.read_bytes()
    except FileNotFoundError:
        temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            os.close(_write_new(temporary, os.urandom(_SALT)))
            with contextlib.suppress(FileExistsError):  # another process made it first: its salt is the folder's
                os.link(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
        salt = path.read_bytes()
    if len(salt) != _SALT:
        raise OSError(f"{path}: not a salt of {_SALT} bytes")
    return salt


def _check(data: bytes) -> bytes:
    return struct.pack("<I", zlib.crc32(data))


def _row_record(key: bytes, row: bytes) -> bytes:
    return _MAGIC + key + row + _check(key + row)


def _row_of(record: bytes, key: bytes) -> bytes | None:
    """The row in ``record`` if it is whole, intact and ``key``'s."""
    body = record[len(_MAGIC):-_CHECK]
    if len(record) != _RECORD or not record.startswith(_MAGIC) or body[:_KEY] != key:
        return None
    return body[_KEY:] if _check(body) == record[-_CHECK:] else None


def _labels_record(key: bytes, labels: tuple[int, ...]) -> bytes:
    body = key + struct.pack(f"<H{len(labels)}H", len(labels), *labels)
    return _MAGIC + body + _check(body)


def _valid(labels: tuple[int, ...]) -> bool:
    """Labels a clustering gives: one per answer, each between 0 and their number."""
    return 0 < len(labels) < 1 << 16 and all(0 <= label <= len(labels) for label in labels)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _read_rows(path: Path, limit: int) -> tuple[int | None, dict[bytes, int]]:
    """A descriptor open on the file of embeddings (None: no file yet), and where each record starts
    (a record's check is read with its row, not here: only its start is, to find the next one)."""
    try:
        reader = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None, {}
    with open(reader, "rb", closefd=False) as whole:
        data = whole.read()
    rows: dict[bytes, int] = {}
    at, records = data.find(_MAGIC), 0
    while 0 <= at <= len(data) - _RECORD:
        if data.startswith(_MAGIC, at + _RECORD) or at + _RECORD == len(data) or _row_of(
                data[at:at + _RECORD], data[at + 4:at + 4 + _KEY]) is not None:
            rows.pop(data[at + 4:at + 4 + _KEY], None)  # the latest copy last: the most recent kept
            rows[data[at + 4:at + 4 + _KEY]] = at
            records += 1
            at += _RECORD
            if data.startswith(_MAGIC, at):
                continue
        at = data.find(_MAGIC, at + 1)  # a record cut short: the next one
    if records > 2 * limit:
        kept = list(rows.items())[-limit:]
        os.close(reader)
        reader = _rewrite(path, b"".join(data[start:start + _RECORD] for _, start in kept))
        rows = {k: i * _RECORD for i, (k, _) in enumerate(kept)}
    return reader, rows


def _read_labels(path: Path, limit: int) -> dict[bytes, tuple[int, ...]]:
    data, records = _read(path), 0
    found: dict[bytes, tuple[int, ...]] = {}
    at = data.find(_MAGIC)
    while at >= 0 and at + 4 + _KEY + 2 <= len(data):
        body = at + len(_MAGIC)
        (count,) = struct.unpack_from("<H", data, body + _KEY)
        end = body + _KEY + 2 + 2 * count
        if end + _CHECK <= len(data) and _check(data[body:end]) == data[end:end + _CHECK]:
            labels: tuple[int, ...] = struct.unpack_from(f"<{count}H", data, body + _KEY + 2)
            if _valid(labels):
                found.pop(data[body:body + _KEY], None)
                found[data[body:body + _KEY]] = labels
                records += 1
            at = data.find(_MAGIC, end + _CHECK)
        else:
            at = data.find(_MAGIC, at + 1)  # cut short or damaged: the next record
    if records > 2 * limit:
        found = dict(list(found.items())[-limit:])
        os.close(_rewrite(path, b"".join(_labels_record(k, v) for k, v in found.items())))
    return found


def _write_new(path: Path, data: bytes) -> int:
    """Writes ``path`` (readable by this user only) and returns a descriptor open on it for reading."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        at = 0
        while at < len(data):
            at += os.write(descriptor, data[at:])
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _rewrite(path: Path, data: bytes) -> int:
    """Replaces ``path`` by ``data``; a descriptor open on what was written (not on whatever another
    process put at ``path`` since); nothing left aside when writing fails."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        descriptor = _write_new(temporary, data)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    try:
        os.replace(temporary, path)
    except BaseException:
        os.close(descriptor)
        temporary.unlink(missing_ok=True)
        raise
    return descriptor


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
