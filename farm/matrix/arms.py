"""A matrix's arms as the user gives them: ``--arm NAME=AGENT`` (repeatable) or ``--matrix FILE.toml``.

``FILE.toml`` holds ``[[arm]]`` tables with ``name``, ``agent`` (as ``-n`` takes it), and
optionally ``connector`` and ``options`` (a table: ``model``, ``temperature``, …); connectors
and options are given only there. Every problem is an ``InputError`` (exit 2) naming the arm,
and for a file its path and the line of the arm's ``[[arm]]`` header.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.agents.options import AgentOptions
from farm.agents.resolve import names_neuro_san_server
from farm.defaults import DEFAULT_ALPHA, DEFAULT_MIN_DROP
from farm.errors import SettingsError
from farm.models import Arm, JsonValue, MatrixPlan
from farm.stats.compare_terms import check_thresholds

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""An arm's name: a letter or digit, then letters, digits, ``_``, ``.``, ``-`` (64 at most)."""
KEYS = ("name", "agent", "connector", "options")
_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*arm[ \t]*\]\]", re.MULTILINE)


@dataclass(frozen=True)
class MatrixFlags:
    """``farm test``'s matrix flags, as given."""

    arms: tuple[str, ...] = ()
    """``--arm NAME=AGENT``, repeatable."""
    file: str | None = None
    """``--matrix FILE.toml``."""
    baseline: str | None = None
    """``--baseline-arm NAME`` (default: the first arm)."""
    seed: int = 0
    """``--seed N``: the order of the arms in each round."""
    alpha: float = DEFAULT_ALPHA
    min_drop: float = DEFAULT_MIN_DROP
    """``--alpha``, ``--min-drop``: the verdicts' thresholds, as ``farm compare`` takes them."""

    @property
    def given(self) -> bool:
        return bool(self.arms or self.file)


def parse_arm_flag(text: str) -> Arm:
    """``NAME=AGENT`` as ``--arm`` takes it."""
    name, sep, agent = text.partition("=")
    if not sep or not agent.strip():
        raise SettingsError(f"--arm {text!r}: expected NAME=AGENT (e.g. --arm cold=py:agent.py:respond)")
    return Arm(name=_checked_name(name.strip(), f"--arm {text!r}"), agent=agent.strip())


def _checked_name(name: str, where: str) -> str:
    if not NAME.fullmatch(name):
        raise SettingsError(f"{where}: arm name {name!r}: use letters, digits, '_', '.', '-' (at most 64, "
                            "starting with a letter or digit)")
    return name


def load_matrix_file(path: Path) -> list[Arm]:
    """The arms of a ``--matrix`` file, in file order."""
    import tomllib  # only where a matrix file is read (farm test's start-up loads no TOML parser)

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SettingsError(f"--matrix {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"arm"})
    if unknown:
        raise SettingsError(f"{path}: unknown key {unknown[0]!r}: a matrix file holds [[arm]] tables only")
    tables = data.get("arm")
    if not isinstance(tables, list) or not tables:
        raise SettingsError(f"{path}: no [[arm]] table (each: name, agent, and optionally connector, options)")
    lines = [text.count("\n", 0, m.start()) + 1 for m in _HEADER.finditer(text)]
    return [_arm_of(table, f"{path}:{lines[i] if i < len(lines) else 1}", i) for i, table in enumerate(tables)]


def _arm_of(table: dict[str, Any], where: str, index: int) -> Arm:
    name = table.get("name")
    label = f"{where}: arm {name!r}" if isinstance(name, str) else f"{where}: arm #{index + 1}"
    if not isinstance(name, str):
        raise SettingsError(f"{label}: name: missing (a string)")
    _checked_name(name, label)
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise SettingsError(f"{label}: unknown key {unknown[0]!r} (expected {', '.join(KEYS)})")
    agent, connector, options = table.get("agent"), table.get("connector"), table.get("options", {})
    if not isinstance(agent, str) or not agent.strip():
        raise SettingsError(f"{label}: agent: missing (an agent as -n takes it: an id, py:…, http://…, cmd:…)")
    if connector is not None and (not isinstance(connector, str) or not connector):
        raise SettingsError(f"{label}: connector: expected a connector id (e.g. openai.gpt-4o)")
    if not isinstance(options, dict):
        raise SettingsError(f"{label}: options: expected a table (e.g. options = {{ temperature = 0.2 }})")
    _check_options(options, label)
    return Arm(name=name, agent=agent.strip(), connector=connector, options=_json(options))


def _check_options(options: dict[str, Any], label: str) -> None:
    model, temperature = options.get("model"), options.get("temperature")
    if model is not None and (not isinstance(model, str) or not model):
        raise SettingsError(f"{label}: options.model: expected a model name")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, int | float)
                                    or not 0 <= temperature <= 2):
        raise SettingsError(f"{label}: options.temperature: expected a number from 0 to 2")


def _json(options: dict[str, Any]) -> dict[str, JsonValue]:
    """The options as JSON values (TOML dates become their text)."""
    loaded: dict[str, JsonValue] = json.loads(json.dumps(options, default=str))
    return loaded


def matrix_plan(flags: MatrixFlags, cwd: str | Path, agent_name: str | None = None) -> MatrixPlan | None:
    """The matrix the flags give (None: no matrix), checked: names unique, a baseline among them;
    ``cwd``: where a matrix file's path starts; ``agent_name``: ``-n`` (refused beside arms)."""
    if not flags.given:
        if flags.baseline is not None:
            raise SettingsError(f"--baseline-arm {flags.baseline}: only with --arm or --matrix")
        return None
    if agent_name:
        raise SettingsError(f"-n {agent_name}: a matrix's arms name the agents: give each as --arm NAME=AGENT")
    arms = [parse_arm_flag(text) for text in flags.arms]
    if flags.file is not None:
        arms += load_matrix_file((Path(cwd) / flags.file).expanduser())
    _check_unique(arms)
    if len(arms) < 2:
        raise SettingsError(f"arm {arms[0].name!r}: a matrix needs at least two arms to compare")
    baseline = flags.baseline if flags.baseline is not None else arms[0].name
    if baseline not in [arm.name for arm in arms]:
        raise SettingsError(f"--baseline-arm {baseline}: no such arm (arms: {', '.join(a.name for a in arms)})")
    check_thresholds(flags.alpha, flags.min_drop)
    return MatrixPlan(arms=arms, baseline=baseline, seed=flags.seed, alpha=flags.alpha, min_drop=flags.min_drop)


def _check_unique(arms: Sequence[Arm]) -> None:
    seen: set[str] = set()
    for arm in arms:
        if arm.name in seen:
            raise SettingsError(f"arm {arm.name!r}: named twice (each arm needs its own name)")
        seen.add(arm.name)


def foreign_agent(name: str | None, matrix: MatrixPlan | None, options: AgentOptions) -> str | None:
    """What a neuro-san case's connections do not apply to (it then runs once): ``-n``, or every
    arm's agent, when it names no neuro-san server; None otherwise."""
    agents = [name] if name else [arm.agent for arm in matrix.arms] if matrix is not None else []
    if agents and all(names_neuro_san_server(agent, options) is False for agent in agents):
        return ", ".join(agents)
    return None


def arm_settings(arm: Arm) -> str:
    """An arm's options as ``AgentRef.settings`` holds them: canonical JSON, '' for none."""
    return json.dumps(arm.options, sort_keys=True, separators=(",", ":")) if arm.options else ""


__all__ = ["MatrixFlags", "arm_settings", "foreign_agent", "load_matrix_file", "matrix_plan", "parse_arm_flag"]
