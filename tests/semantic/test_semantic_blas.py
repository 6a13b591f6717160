"""numpy imported for the semantic step with its BLAS on one thread (``farm.semantic.blas``): no
OpenBLAS thread spinning beside the sweep, and the user's environment as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from farm.extras import install_hint
from farm.semantic import missing_requirement

MISSING = missing_requirement()
pytestmark = [
    pytest.mark.skipif(MISSING is not None, reason=f"{MISSING} is not installed ({install_hint('semantic')})"),
    pytest.mark.skipif(not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2,
                       reason="counts a process's threads in /proc on a machine of 2 cores or more"),
]

CHILD = """
import os
from farm.semantic.blas import import_numpy  # noqa
before = len(os.listdir("/proc/self/task"))
import_numpy()
import numpy
print(len(os.listdir("/proc/self/task")) - before, os.environ.get("OPENBLAS_NUM_THREADS", "unset"))
"""


def threads_started_and_setting(**env: str) -> list[str]:
    chosen = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")  # what OpenBLAS reads
    clean = {k: v for k, v in os.environ.items() if k not in chosen}
    done = subprocess.run([sys.executable, "-c", CHILD], env={**clean, **env}, capture_output=True, text=True,
                          check=True, timeout=120)
    return done.stdout.split()


def test_numpy_loaded_to_embed_starts_no_blas_thread_and_leaves_the_environment_unset() -> None:
    assert threads_started_and_setting() == ["0", "unset"]


def test_a_blas_thread_count_the_user_set_is_kept() -> None:
    assert threads_started_and_setting(OPENBLAS_NUM_THREADS="2") == ["1", "2"]
