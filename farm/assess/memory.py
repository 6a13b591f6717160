"""Failure modes remembered per case, so that "a new failure mode appeared" is a finding.

``ModeMemory`` is the seam. Where there is a history, the history store keeps the modes
(``farm.history.modes.HistoryModes``, its ``farm_failure_modes`` table); where there is none,
``JsonFileModes`` keeps ``{case id: [mode, …]}`` in a JSON file (default
``$FARM_DATA_DIR/assess-modes.json``, the data directory of SPEC 10); ``InMemoryModes`` keeps
nothing between processes. The judge is shown a case's remembered modes as its numbered list, so
the same failures get the same modes run after run.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Protocol

from farm.errors import SettingsError
from farm.settings import FarmSettings

__all__ = ["InMemoryModes", "JsonFileModes", "ModeMemory", "default_modes_path"]

MODES_FILE = "assess-modes.json"


class ModeMemory(Protocol):
    """Where a case's known failure modes live between assessments."""

    def known(self, case_id: str) -> list[str]:
        """The modes remembered for ``case_id``, oldest first."""
        ...

    def remember(self, case_id: str, modes: list[str]) -> None:
        """Add ``modes`` not yet known for ``case_id`` (order kept, duplicates ignored)."""
        ...

    def close(self) -> None:
        """Let go of what the memory holds open (a database connection)."""
        ...


class InMemoryModes:
    """Modes kept for the life of the object."""

    def __init__(self) -> None:
        self._modes: dict[str, list[str]] = {}

    def known(self, case_id: str) -> list[str]:
        return list(self._modes.get(case_id, []))

    def remember(self, case_id: str, modes: list[str]) -> None:
        kept = self._modes.setdefault(case_id, [])
        kept += [m for m in dict.fromkeys(modes) if m not in kept]

    def close(self) -> None:
        return None


class JsonFileModes(InMemoryModes):
    """Modes kept in a JSON file, written after every change (atomically: a rename)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise SettingsError(f"{self.path}: not a failure-mode file: {exc}") from None
            if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
                raise SettingsError(f"{self.path}: not a failure-mode file: expected {{case id: [mode, …]}}")
            self._modes = {str(k): [str(m) for m in v] for k, v in data.items()}

    def remember(self, case_id: str, modes: list[str]) -> None:
        super().remember(case_id, modes)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".modes-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(self._modes, handle, ensure_ascii=False, indent=1, sort_keys=True)
        os.replace(tmp, self.path)


def default_modes_path() -> Path:
    """``assess-modes.json`` in the farm's data directory (``FarmSettings.data_dir``: ``FARM_DATA_DIR``,
    else ``~/.local/share/agent-farm``)."""
    return FarmSettings.from_env().data_dir / MODES_FILE
