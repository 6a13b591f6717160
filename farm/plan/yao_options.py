"""Yao ``agent eval``'s command-line extras as library functions (``farm test`` wires them).

- ``--ctx FILE``: a JSON context for every call (``chat_id``, ``authorized``, ``metadata``,
  ``client``, ``locale``, ``referer``); flags and each case's own ``user``/``team`` win over it;
- ``--collect-only`` / ``--dry-run``: load, validate and resolve everything, list the cases (ids /
  JSON lines), call no agent.

``--run REGEX`` selects cases with ``-k`` (``farm.plan.batch.compile_run_pattern``); ``--simulator``
and ``--yao-compat`` act when suites load (``farm.suites.dynamic.LoadOptions``),
``--before``/``--after`` around the sweep (``farm.suites.hooks.SweepHooks``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.errors import SettingsError
from farm.plan.sweep_plan import PlannedCase
from farm.run.environment import RunEnvironment
from farm.yaofile import read_yao_object

__all__ = ["CONTEXT_KEYS", "EnvironmentSpec", "dry_run_lines", "load_context_file"]

CONTEXT_KEYS = ("chat_id", "authorized", "metadata", "client", "locale", "referer")
"""Keys of a ``--ctx`` file (Yao's ``ContextConfig``)."""
_CLIENT_KEYS = {"type": "client_type", "ip": "client_ip", "user_agent": None}


@dataclass(frozen=True)
class EnvironmentSpec:
    """What every run sees, but for the sweep's id and ``--ctx`` (a file read once the suite is open)."""

    run: RunEnvironment
    ctx: str | None = None
    cwd: str = "."

    def for_sweep(self, sweep_id: str) -> RunEnvironment:
        """The sweep's environment: its id, and Yao's context file when given."""
        ctx = load_context_file(self.ctx, self.cwd) if self.ctx else {}
        return dataclasses.replace(self.run, sweep_id=sweep_id, **ctx)


def load_context_file(path: str, cwd: str) -> dict[str, Any]:
    """``--ctx FILE`` as ``RunEnvironment`` fields (``chat_id``, ``authorized``, ``metadata``, …).

    Raises:
        SettingsError: the file is missing, not a JSON object, or has a key or value of the wrong kind.
    """
    where = Path(path) if Path(path).is_absolute() else Path(cwd) / path
    data = read_yao_object(where, "--ctx file", SettingsError)
    unknown = [k for k in data if k not in CONTEXT_KEYS]
    if unknown:
        raise SettingsError(f"{where}: {unknown[0]}: unknown key (expected one of: {', '.join(CONTEXT_KEYS)})")
    fields: dict[str, Any] = {}
    for key in ("chat_id", "locale", "referer"):
        if key in data:
            fields[key] = _string(data[key], where, key)
    for key in ("authorized", "metadata"):
        if key in data:
            fields[key] = _object(data[key], where, key)
    client = _object(data.get("client", {}), where, "client")
    for key, value in client.items():
        if key not in _CLIENT_KEYS:
            raise SettingsError(f"{where}: client.{key}: unknown key (expected one of: {', '.join(_CLIENT_KEYS)})")
        field = _CLIENT_KEYS[key]
        if field is not None:
            fields[field] = _string(value, where, f"client.{key}")
    return fields


def _string(value: Any, where: Path, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise SettingsError(f"{where}: {key}: must be a non-empty string, got {json.dumps(value)}")
    return value


def _object(value: Any, where: Path, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SettingsError(f"{where}: {key}: must be an object, got {json.dumps(value)}")
    return value


def dry_run_lines(cases: Iterable[PlannedCase]) -> Iterator[str]:
    """``--dry-run``: one JSON line per case that would run (Yao prints the cases as JSONL)."""
    for planned in cases:
        case, plan = planned.case, planned.plan
        entry: dict[str, Any] = {"id": case.id, "source": case.source, "line": case.line, "format": case.format,
                                 "agent": planned.agent.label, "runs": plan.runs, "required": plan.required}
        if case.dynamic is not None:
            entry["dynamic"] = {"simulator": case.dynamic.simulator.use or "fixed_responses",
                                "checkpoints": [cp.id for cp in case.dynamic.checkpoints],
                                "max_turns": case.dynamic.max_turns}
        if case.skip:
            entry["skip"] = case.skip_reason or True
        yield json.dumps(entry, ensure_ascii=False)
