"""Failure modes remembered per case, so that "a new failure mode appeared" is a finding.

``ModeMemory`` is the seam: the history store (``farm/history``) can implement it with its own
table; until then ``JsonFileModes`` keeps ``{case id: [mode, …]}`` in a JSON file (default
``$FARM_DATA_DIR/assess-modes.json``, the data directory of SPEC 10) and ``InMemoryModes`` keeps
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


class InMemoryModes:
    """Modes kept for the life of the object."""

    def __init__(self) -> None:
        self._modes: dict[str, list[str]] = {}

    def known(self, case_id: str) -> list[str]:
        return list(self._modes.get(case_id, []))

    def remember(self, case_id: str, modes: list[str]) -> None:
        kept = self._modes.setdefault(case_id, [])
        kept += [m for m in dict.fromkeys(modes) if m not in kept]


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
    """``$FARM_DATA_DIR/assess-modes.json``, else ``~/.local/share/agent-farm/assess-modes.json``."""
    root = os.environ.get("FARM_DATA_DIR") or str(Path.home() / ".local" / "share" / "agent-farm")
    return Path(root) / MODES_FILE
