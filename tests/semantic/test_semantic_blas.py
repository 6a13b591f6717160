"""numpy and scipy loaded for the semantic step without BLAS threads (``farm.semantic.blas``): no
OpenBLAS thread spinning beside the sweep, and nothing of the process changed for its other
threads or the agents they start (the environment, their CPUs)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.semantic_model import needs_model

BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
"""What OpenBLAS reads for its thread count: cleared in the child, so that it counts CPUs."""


def run_child(code: str, **extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES} | extra
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                          timeout=120).stdout.strip()


@functools.cache
def openblas_with_threads() -> bool:
    """numpy's BLAS is OpenBLAS and starts a thread per CPU here when loaded as usual."""
    return run_child("import os, numpy, threadpoolctl\n"
                     "apis = {i['internal_api'] for i in threadpoolctl.threadpool_info()}\n"
                     "print(apis == {'openblas'} and len(os.listdir('/proc/self/task')) > 1)") == "True"


def needs_openblas_threads() -> None:
    if not Path("/proc/self/task").is_dir() or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("counts a process's threads in /proc; needs 2 CPUs or more")
    if not openblas_with_threads():
        pytest.skip("numpy's BLAS here is not OpenBLAS starting threads of its own")


STATE = "(len(os.listdir('/proc/self/task')), sorted(os.sched_getaffinity(0)), os.environ.get('OPENBLAS_NUM_THREADS'))"


@needs_model
def test_embedding_and_clustering_start_no_blas_thread_and_change_nothing_else(tmp_path: Path) -> None:
    needs_openblas_threads()
    code = f"""
import os, sys
before = {STATE}
from farm.semantic.embedder import embed
from farm.semantic.cluster import meaning_labels
meaning_labels(embed(["yes", "no", "maybe so"]))  # three answers: scipy.cluster (its own OpenBLAS) too
print(before == {STATE}, "scipy.cluster.hierarchy" in sys.modules, "scipy.special" in sys.modules)
import threadpoolctl  # asked last: the farm did not need it, numpy having been loaded pinned
print(sorted({{i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}}))
"""
    # scipy.special comes with scipy.cluster; the GELU needs none of it
    # an empty data folder, so that the model runs; the tokenizer's own threads (rayon) kept out of the count
    out = run_child(code, FARM_DATA_DIR=str(tmp_path), TOKENIZERS_PARALLELISM="false").splitlines()
    assert out == ["True True True", "[1]"]  # numpy's and scipy's OpenBLAS each sized to one thread


def test_no_other_thread_sees_a_blas_setting_while_numpy_loads() -> None:
    """An agent started by another thread during the import gets the environment as it was."""
    needs_openblas_threads()
    code = """
import os, threading
seen, done = set(), threading.Event()
def watch():
    while not done.is_set():
        seen.add(os.environ.get("OPENBLAS_NUM_THREADS"))
watcher = threading.Thread(target=watch)
watcher.start()
from farm.semantic.blas import import_numpy
threads = len(os.listdir("/proc/self/task"))
import_numpy()
started = len(os.listdir("/proc/self/task")) - threads  # counted while the watcher runs: a thread
done.set()                                                # joined can linger in /proc for a while
watcher.join()
print(sorted(map(str, seen)), started)
"""
    assert run_child(code) == "['None'] 0"
