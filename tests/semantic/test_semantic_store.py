"""A case's clusters kept by its distinct answers, and embeddings and clusters kept on disk for the
next processes (issue 45): the figures are the same with and without them."""

from __future__ import annotations

import json
import os
import stat
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

from farm.semantic.cache import EmbeddingCache, answers_key, text_key
from farm.semantic.store import _MAGIC, _RECORD, _ROW, DiskStore
from tests.support.semantic_model import needs_model

ROOT = Path(__file__).resolve().parents[2]

POOL = ["Paris is the capital of France.", "The capital of France is Paris.", "France's capital is Paris.",
        "I'm sorry, but I can't help with that.", "I cannot help you with this.", "The answer is 41.",
        "It is 41.", "Water boils at 100 degrees Celsius at sea level.", "good", "bad", "Lyon.",
        "Sorry, I am unable to assist with this request."]

AGENT = '''
import random
POOL = {pool!r}

def respond(messages, context):
    """Simulated answers: case cN draws its set of distinct answers from POOL by N % 7 (so sets
    repeat across cases), then each run one of them, with uneven counts."""
    case = int(str(context.case_id).lstrip("c"))
    pick = random.Random(case % 7)
    answers = pick.sample(POOL, 2 + case % 7 % 5)
    return answers[min(len(answers) - 1, int(context.run) % (len(answers) + 2))]
'''

SWEEP = """
import json, sys
from farm import TestSettings, run_sweep
from farm.semantic import embedding_cache
report = run_sweep(TestSettings(input=sys.argv[1], name=sys.argv[2], runs=12))
stats = embedding_cache().stats()
print(json.dumps({"cases": {c.id: [c.semantic_status, c.semantic_consistency,
                                   [[k.count, k.share, k.example] for k in c.semantic_clusters or []]]
                            for c in report.results},
                  "embedded": stats.embedded, "numpy": "numpy" in sys.modules}))
"""


def _sweep(tmp_path: Path, data: Path, cache: str) -> dict[str, Any]:
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps({"id": f"c{i}", "input": "Say something."}) + "\n" for i in range(21)))
    agent = tmp_path / "simulated.py"
    agent.write_text(AGENT.format(pool=POOL))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FARM_SEMANTIC_CACHE": cache, "FARM_DATA_DIR": str(data)}
    done = subprocess.run([sys.executable, "-c", SWEEP, str(suite), f"py:{agent}:respond"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, check=False, env=env)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


@needs_model
def test_the_figures_are_the_same_with_and_without_the_caches(tmp_path: Path) -> None:
    """21 cases of simulated answers, their sets of distinct answers repeating every 7 cases: no
    cache at all; the caches in memory (and a disk empty at first); then a fresh process reading
    the disk: every case's figures are the same, and the last process loads neither numpy nor
    the model."""
    data = tmp_path / "data"
    uncached = _sweep(tmp_path, data, "0")
    assert not (data / "semantic").exists()
    cached = _sweep(tmp_path, data, "10000")
    from_disk = _sweep(tmp_path, data, "10000")
    assert cached["cases"] == uncached["cases"] and from_disk["cases"] == uncached["cases"]
    assert {status for status, _, _ in uncached["cases"].values()} == {"computed"}
    assert len({len(clusters) for _, _, clusters in uncached["cases"].values()}) > 1  # not all alike: a real check
    assert uncached["embedded"] > cached["embedded"] > 0
    assert (from_disk["embedded"], from_disk["numpy"]) == (0, False)


def _store(tmp_path: Path, limit: int = 10) -> DiskStore:
    return DiskStore(tmp_path / "semantic", limit)


@needs_model
def test_the_disk_gives_back_what_was_kept_and_skips_a_record_cut_short(tmp_path: Path) -> None:
    row = struct.pack("<384f", *[i / 384 for i in range(384)])
    first = _store(tmp_path)
    first.keep_rows({text_key("good"): row})
    first.keep_labels(answers_key(["good", "bad"]), (1, 2))
    second = _store(tmp_path)
    assert second.row(text_key("good")) == row and second.row(text_key("bad")) is None
    assert second.labels(answers_key(["good", "bad"])) == (1, 2)
    assert second.labels(answers_key(["bad", "good"])) is None  # the order of the answers counts
    for path in (tmp_path / "semantic").glob("*.bin"):  # a writer that died mid-record
        with path.open("ab") as f:
            f.write(b"\x01" * 20)
    third = _store(tmp_path)
    assert third.row(text_key("good")) == row and third.labels(answers_key(["good", "bad"])) == (1, 2)


@needs_model
def test_a_file_past_twice_the_limit_keeps_the_most_recent(tmp_path: Path) -> None:
    writer = _store(tmp_path, limit=2)
    for i in range(5):
        writer.keep_labels(answers_key([str(i), "x"]), (1, 1))
    reader = _store(tmp_path, limit=2)
    assert [reader.labels(answers_key([str(i), "x"])) for i in range(5)] == [None, None, None, (1, 1), (1, 1)]
    assert _store(tmp_path, limit=2).labels(answers_key(["4", "x"])) == (1, 1)


def test_a_folder_that_cannot_be_written_leaves_the_store_out(tmp_path: Path) -> None:
    (tmp_path / "semantic").write_text("a file where the folder should be")
    store = _store(tmp_path)
    store.keep_labels(answers_key(["a", "b"]), (1, 2))
    assert store.labels(answers_key(["a", "b"])) is None and store.row(text_key("a")) is None


def test_a_case_s_clusters_are_kept_by_its_answers_in_memory() -> None:
    cache = EmbeddingCache(limit=2)
    for i in range(3):
        cache.keep_labels(answers_key([str(i), "x"]), (1, 2))
    assert [cache.labels(answers_key([str(i), "x"])) for i in range(3)] == [None, (1, 2), (1, 2)]
    assert EmbeddingCache(limit=0).labels(answers_key(["1", "x"])) is None


WRITER = """
import sys
from pathlib import Path
from farm.semantic.cache import answers_key
from farm.semantic.store import _MAGIC, _RECORD, _ROW, DiskStore
store = DiskStore(Path(sys.argv[1]), 10_000)
for i in range(400):
    store.keep_labels(answers_key([sys.argv[2], str(i)]), tuple(range(1, 2 + i % 50)))
"""


@needs_model
def test_processes_writing_at_once_do_not_mix_their_records(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "semantic"), name], env=env)
               for name in ("a", "b", "c")]
    assert [w.wait(timeout=300) for w in writers] == [0, 0, 0]
    store = _store(tmp_path, limit=10_000)
    for name in ("a", "b", "c"):
        assert [store.labels(answers_key([name, str(i)])) for i in range(400)] == [
            tuple(range(1, 2 + i % 50)) for i in range(400)]


def _records(path: Path) -> int:
    return path.read_bytes().count(_MAGIC)


@needs_model
def test_a_record_read_is_the_text_s_own_even_when_another_process_rewrites_the_file(tmp_path: Path) -> None:
    """A reader keeps the descriptor of the file its offsets were computed from (another process's
    rewrite puts a new file in place: not what the reader indexed), and checks each record's key:
    a record not for the key asked is a miss, never another text's embedding."""
    rows = {text_key(str(i)): bytes([i]) * _ROW for i in range(6)}
    writer = _store(tmp_path, limit=100)
    writer.keep_rows(rows)
    reader = _store(tmp_path, limit=100)
    assert reader.has(text_key("0"))
    (path,) = (tmp_path / "semantic").glob("embeddings-*.bin")
    data = path.read_bytes()
    size = len(data) // 6
    other = tmp_path / "other"
    other.write_bytes(data[5 * size:] + data[4 * size:5 * size])  # another process's rewrite: other rows first
    os.replace(other, path)
    assert [reader.row(text_key(str(i))) for i in range(6)] == list(rows.values())
    third = _store(tmp_path, limit=100)
    assert third.has(text_key("5")) and third.row(text_key("5")) == rows[text_key("5")]
    with path.open("r+b") as f:  # the same file changed under the reader: record 0 now holds record 1
        f.write(data[size:2 * size])
    assert third.row(text_key("5")) is None and third.row(text_key("4")) == rows[text_key("4")]


@needs_model
def test_a_long_lived_process_keeps_the_files_and_its_memory_bounded(tmp_path: Path) -> None:
    store = _store(tmp_path, limit=2)
    for i in range(100):
        store.keep_rows({text_key(str(i)): bytes([i]) * _ROW})
        store.keep_labels(answers_key([str(i), "x"]), (1, 1))
        assert len(store._written) + len(store._rows) <= 4 and len(store._labels) <= 4
    for path in (tmp_path / "semantic").glob("*.bin"):
        assert _records(path) <= 4
    fresh = _store(tmp_path, limit=2)
    assert fresh.row(text_key("99")) == bytes([99]) * _ROW and fresh.labels(answers_key(["99", "x"])) == (1, 1)


SHORT_WRITE = """
import resource, signal, sys
from pathlib import Path
from farm.semantic.cache import text_key
from farm.semantic.store import DiskStore, _RECORD, _ROW, _rewrite
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
folder = Path(sys.argv[1])
store = DiskStore(folder, 100)
store.keep_rows({text_key("a"): b"a" * _ROW})
(path,) = folder.glob("embeddings-*.bin")
resource.setrlimit(resource.RLIMIT_FSIZE, (_RECORD + 100, resource.RLIM_INFINITY))
store.keep_rows({text_key("b"): b"b" * _ROW})  # a disk full: 100 bytes of the record written
store.keep_rows({text_key("c"): b"c" * _ROW})  # not written: the store went read-only
try:
    _rewrite(folder / "big", b"x" * (_RECORD + 200))
except OSError as error:
    print("rewrite failed:", error.errno)
"""


@needs_model
def test_a_short_write_is_skipped_and_a_failed_rewrite_leaves_nothing_aside(tmp_path: Path) -> None:
    folder = tmp_path / "semantic"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SHORT_WRITE, str(folder)], capture_output=True, text=True,
                          timeout=300, check=False, env=env)
    assert done.returncode == 0 and "rewrite failed" in done.stdout, done.stderr
    assert not list(folder.glob("*.tmp"))
    (path,) = folder.glob("embeddings-*.bin")
    assert path.stat().st_size == _RECORD + 100
    later = _store(tmp_path, limit=100)  # another process appends after the cut record
    later.keep_rows({text_key("d"): b"d" * _ROW})
    reader = _store(tmp_path, limit=100)
    assert [reader.row(text_key(t)) for t in "abcd"] == [b"a" * _ROW, None, None, b"d" * _ROW]


@needs_model
def test_labels_cut_short_damaged_or_impossible_are_skipped(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.keep_labels(answers_key(["a", "b"]), (1, 2))
    store.keep_labels(answers_key(["a", "c"]), (1, 7))  # not labels of 2 answers: not kept
    (path,) = (tmp_path / "semantic").glob("labels-*.bin")
    whole = path.read_bytes()
    with path.open("ab") as f:
        f.write(whole[:-3])  # cut short
        f.write(whole[:-1] + b"\x00" if whole[-1] else whole[:-1] + b"\x01")  # damaged
    _store(tmp_path).keep_labels(answers_key(["b", "c"]), (0, 0))
    reader = _store(tmp_path)
    assert reader.labels(answers_key(["a", "b"])) == (1, 2) and reader.labels(answers_key(["b", "c"])) == (0, 0)
    assert reader.labels(answers_key(["a", "c"])) is None
    assert _records(path) == 4


@needs_model
def test_the_folder_is_private_and_keys_are_salted_per_data_directory(tmp_path: Path) -> None:
    """The folder is the user's alone, and holds no text nor a plain hash of one: each data
    directory salts its keys with its own random salt (so two folders' records differ)."""
    one, two = _store(tmp_path / "one"), _store(tmp_path / "two")
    for store in (one, two):
        store.keep_rows({text_key("good"): b"\x00" * _ROW})
        store.keep_labels(answers_key(["good", "bad"]), (1, 2))
    folder = tmp_path / "one" / "semantic"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {p.name.split("-")[0]: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {
        "embeddings": 0o600, "labels": 0o600, "salt": 0o600}
    salts = [(tmp_path / d / "semantic" / "salt").read_bytes() for d in ("one", "two")]
    assert len(salts[0]) == 16 and salts[0] != salts[1]
    for path in folder.glob("*.bin"):
        data = path.read_bytes()
        assert text_key("good") not in data and answers_key(["good", "bad"]) not in data and b"good" not in data
        assert data != (tmp_path / "two" / "semantic" / path.name).read_bytes()
    assert _store(tmp_path / "one").row(text_key("good")) == b"\x00" * _ROW
