"""``python -m farm …`` in a process of its own, in-process mode (no broker), importing this checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.servers import ROOT


def farm(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300.0
         ) -> subprocess.CompletedProcess[str]:
    """Run ``farm ARGS`` in ``cwd`` with a private data directory there; no FARM_ or COLUMNS setting leaks in."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("FARM_") and k != "COLUMNS"}
    full.update({"PYTHONPATH": str(ROOT), "FARM_DATA_DIR": str(cwd / ".farm-data"), **(env or {})})
    return subprocess.run([sys.executable, "-m", "farm", *args], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=timeout, check=False)
