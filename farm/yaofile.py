"""Reading the farm's small configuration inputs: Yao ``.yao`` files and ``FARM_*`` numbers.

``package.yao`` manifests and ``*.conn.yao`` connectors are JSON with comments (json5). Both
readers raise the caller's error class with the file (or variable) named, so the CLI prints
one line and exits 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from farm.errors import FarmError


def read_yao_object(path: Path, what: str, error: type[FarmError]) -> dict[str, Any]:
    """The JSON object in ``path``; ``error`` names the file and says what is wrong."""
    import json5  # here: only a suite with a manifest or a connector pays for it

    try:
        data = json5.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise error(f"{path}: not a valid {what}: {exc}") from None
    if not isinstance(data, dict):
        raise error(f"{path}: not a valid {what}: expected an object, got {type(data).__name__}")
    return data


