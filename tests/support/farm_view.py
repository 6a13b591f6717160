"""``farm view`` servers for the view's tests: each on a free port in its project, stopped after."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.servers import ROOT, free_port, stop_process, wait_for_port


def view_env(data: Path, **extra: str) -> dict[str, str]:
    """A clean environment (no FARM_ or OTEL_ of the caller's) with ``data`` as the farm's data dir."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FARM_", "OTEL_"))}
    return clean | {"PYTHONPATH": str(ROOT), "FARM_DATA_DIR": str(data)} | extra


class ViewServers:
    """``farm view`` processes a test started (the ``view_servers`` fixture stops them)."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[Any]] = []

    def start(self, project: Path, *args: str, env: dict[str, str]) -> str:
        """A ``farm view`` in ``project`` with ``args``, ready; its base URL."""
        port = free_port()
        process = subprocess.Popen([sys.executable, "-m", "farm", "view", "--port", str(port), *args], cwd=project,
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.started.append(process)
        wait_for_port(port, timeout=120, process=process)
        return f"http://127.0.0.1:{port}"

    def stop_all(self) -> None:
        for process in self.started:
            stop_process(process)
