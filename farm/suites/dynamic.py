"""Load-time half of Yao dynamic cases (SPEC 14.1): ``simulator``, ``checkpoints``, ``max_turns``.

Where Yao's documentation and its code disagree, a typo would silently test nothing, so the
default refuses the case and says why; ``LoadOptions.yao_compat`` loads it as Yao's code runs it:

- a checkpoint written with ``assertion`` (Yao reads ``assert``) or with no ``assert``: Yao
  reaches it at once;
- an ``after`` naming no checkpoint of the case: Yao counts it as met;
- ``simulator`` without ``checkpoints`` or the other way round: Yao runs a standard case and
  ignores them; ``assert``/``expected`` beside a simulator: Yao's dynamic runner ignores them;
- ``max_turns`` of 0 or less: Yao uses 20.

``--simulator REF`` (``LoadOptions.simulator``) replaces every dynamic case's simulator agent
(its ``fixed_responses`` too; persona, goal and connector stay) and gives one to a case that has
checkpoints but no simulator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from farm.checks.extract import json_type_name
from farm.checks.spec import Issue, parse_assertions, suggest
from farm.models import Assertion, Checkpoint, DynamicSpec, SimulatorReply, SimulatorSpec
from farm.models.dynamic import DEFAULT_MAX_TURNS

__all__ = ["DYNAMIC_KEYS", "LoadOptions", "parse_dynamic"]

DYNAMIC_KEYS = ("simulator", "checkpoints", "max_turns")
CHECKPOINT_KEYS = ("id", "description", "assert", "after", "required")
SIMULATOR_KEYS = ("use", "options", "fixed_responses")
SIMULATOR_OPTION_KEYS = ("metadata", "connector")
COMPAT_HINT = "; --yao-compat runs it as Yao's code does"


@dataclass(frozen=True)
class LoadOptions:
    """How suites are read: ``--yao-compat`` and ``--simulator``."""

    yao_compat: bool = False
    simulator: str | None = None
    """``--simulator``: the simulator of every dynamic case."""
    foreign_agent: str | None = None
    """``-n`` when it names an agent that is not a neuro-san server: a neuro-san case's
    ``connections`` do not apply, so it runs once (``farm.suites.hocon``)."""
    allow_remote_includes: bool = False
    """``--allow-remote-includes``: a HOCON ``include url(...)`` may fetch its URL."""
    listing: bool = False
    """``--collect-only``: the cases are checked, planned and listed, never run, so a JSONL case's
    turn holds its checks only, shared by the cases with the same ones (``farm.suites.jsonl``):
    its input is checked as always but not built into messages nothing reads."""


def parse_dynamic(obj: dict[str, Any], base_dir: str, options: LoadOptions,
                  issues: list[Issue]) -> DynamicSpec | None:
    """The case's dynamic part, or None for a standard case; problems go to ``issues``."""
    has_checkpoints = "checkpoints" in obj
    has_simulator = "simulator" in obj or (has_checkpoints and options.simulator is not None)
    if not has_simulator and not has_checkpoints:
        if "max_turns" in obj and not options.yao_compat:
            issues.append(("max_turns", "only used by dynamic cases (with simulator and checkpoints)"))
        return None
    if not (has_simulator and has_checkpoints):
        if not options.yao_compat:
            missing = "checkpoints" if has_simulator else "simulator"
            issues.append((missing, f"missing: a dynamic case needs both simulator and checkpoints (Yao runs this "
                                    f"as a standard case and ignores the other){COMPAT_HINT}"))
        return None
    if not options.yao_compat:
        issues += [(k, "a dynamic case is judged by its checkpoints: Yao's dynamic runner ignores it" + COMPAT_HINT)
                   for k in ("assert", "expected") if k in obj]
    simulator = _simulator(obj.get("simulator", {}), options, issues)
    checkpoints = _checkpoints(obj["checkpoints"], base_dir, options, issues)
    max_turns = _max_turns(obj.get("max_turns"), options, issues)
    if simulator is None or checkpoints is None or max_turns is None:
        return None
    return DynamicSpec(simulator=simulator, checkpoints=checkpoints, max_turns=max_turns)


def _unknown(raw: dict[str, Any], allowed: tuple[str, ...], where: str) -> list[Issue]:
    return [(f"{where}.{k}", f"unknown key (expected one of: {', '.join(allowed)}){suggest(k, allowed)}")
            for k in raw if k not in allowed]


def _simulator(raw: Any, options: LoadOptions, issues: list[Issue]) -> SimulatorSpec | None:
    if not isinstance(raw, dict):
        issues.append(("simulator", f"must be an object, got {json_type_name(raw)}"))
        return None
    before = len(issues)
    issues += _unknown(raw, SIMULATOR_KEYS, "simulator")
    settings = raw.get("options", {})
    if not isinstance(settings, dict):
        issues.append(("simulator.options", f"must be an object, got {json_type_name(settings)}"))
        settings = {}
    issues += _unknown(settings, SIMULATOR_OPTION_KEYS, "simulator.options")
    metadata, connector = settings.get("metadata", {}), settings.get("connector")
    if not isinstance(metadata, dict):
        issues.append(("simulator.options.metadata", f"must be an object, got {json_type_name(metadata)}"))
    if connector is not None and (not isinstance(connector, str) or not connector):
        issues.append(("simulator.options.connector", "must be a connector id (a non-empty string)"))
    replies = _fixed_responses(raw.get("fixed_responses", []), issues)
    use = options.simulator or raw.get("use")
    if options.simulator:
        replies = []
    issues += _use_issues(use, bool(replies))
    if len(issues) > before:
        return None
    return SimulatorSpec(use=use, connector=connector, metadata=metadata, fixed_responses=replies)


def _use_issues(use: Any, scripted: bool) -> list[Issue]:
    if use is None:
        return [] if scripted else [("simulator.use", "missing: an agent id, llm:<connector>, or give "
                                                      "fixed_responses")]
    if not isinstance(use, str) or not use.strip():
        return [("simulator.use", "must be an agent id or llm:<connector> (a non-empty string)")]
    if use == "llm:":
        return [("simulator.use", "llm: needs a connector id (llm:openai.gpt-4o)")]
    return []


def _fixed_responses(raw: Any, issues: list[Issue]) -> list[SimulatorReply]:
    if not isinstance(raw, list):
        issues.append(("simulator.fixed_responses", f"must be a list, got {json_type_name(raw)}"))
        return []
    replies = []
    for n, item in enumerate(raw):
        at = f"simulator.fixed_responses[{n}]"
        if isinstance(item, str) and item:
            replies.append(SimulatorReply(message=item))
        elif isinstance(item, dict) and not _unknown(item, ("message", "goal_achieved"), at):
            message, achieved = item.get("message", ""), item.get("goal_achieved", False)
            if not isinstance(message, str) or not isinstance(achieved, bool) or not (message or achieved):
                issues.append((at, "expected {message: non-empty string, goal_achieved: bool}"))
            else:
                replies.append(SimulatorReply(message=message, goal_achieved=achieved))
        else:
            issues.append((at, "expected a message (non-empty string) or {message, goal_achieved}"))
    return replies


def _checkpoints(raw: Any, base_dir: str, options: LoadOptions, issues: list[Issue]) -> list[Checkpoint] | None:
    if not isinstance(raw, list) or not raw:
        issues.append(("checkpoints", f"must be a non-empty list of objects, got {json_type_name(raw)}"))
        return None
    before = len(issues)
    points = [_checkpoint(item, f"checkpoints[{n}]", base_dir, options, issues) for n, item in enumerate(raw)]
    found = [p for p in points if p is not None]
    ids = [p.id for p in found]
    for n, point in enumerate(found):
        if point.id in ids[:n]:
            issues.append((f"checkpoints[{n}].id", f"duplicate checkpoint id {point.id!r}"))
        for after in point.after:
            if after not in ids and not options.yao_compat:
                issues.append((f"checkpoints[{n}].after", f"{after!r} names no checkpoint of this case (Yao "
                                                          f"counts it as met){COMPAT_HINT}"))
    return found if len(issues) == before else None


def _checkpoint(raw: Any, where: str, base_dir: str, options: LoadOptions, issues: list[Issue]) -> Checkpoint | None:
    if not isinstance(raw, dict):
        issues.append((where, f"a checkpoint must be an object, got {json_type_name(raw)}"))
        return None
    before = len(issues)
    issues += _unknown({k: v for k, v in raw.items() if k != "assertion"}, CHECKPOINT_KEYS, where)
    if "assertion" in raw and not options.yao_compat:
        issues.append((f"{where}.assertion", "Yao's code reads 'assert': with 'assertion' the checkpoint has no "
                                             f"assertion and is reached at once{COMPAT_HINT}"))
    point_id = raw.get("id")
    if not isinstance(point_id, str) or not point_id.strip():
        issues.append((f"{where}.id", "missing: a checkpoint needs an id (a non-empty string)"))
    assertions: list[Assertion] = []
    if "assert" in raw:
        assertions, found = parse_assertions(raw["assert"], base_dir, key=f"{where}.assert")
        issues += found
    elif not options.yao_compat and "assertion" not in raw:
        issues.append((f"{where}.assert", f"missing: Yao reaches a checkpoint without assert at once{COMPAT_HINT}"))
    after, required = raw.get("after", []), raw.get("required", True)
    if not isinstance(after, list) or not all(isinstance(a, str) for a in after):
        issues.append((f"{where}.after", "must be a list of checkpoint ids"))
    if not isinstance(required, bool):
        issues.append((f"{where}.required", f"must be true or false, got {json_type_name(required)}"))
    description = raw.get("description")
    if description is not None and not isinstance(description, str):
        issues.append((f"{where}.description", f"must be a string, got {json_type_name(description)}"))
    if len(issues) > before:
        return None
    return Checkpoint(id=str(point_id), description=description, assertions=assertions, after=after, required=required)


def _max_turns(raw: Any, options: LoadOptions, issues: list[Issue]) -> int | None:
    if raw is None:
        return DEFAULT_MAX_TURNS
    if isinstance(raw, bool) or not isinstance(raw, int):
        issues.append(("max_turns", f"must be an integer, got {json_type_name(raw)}"))
        return None
    if raw < 1:
        if options.yao_compat:
            return DEFAULT_MAX_TURNS
        issues.append(("max_turns", f"must be at least 1, got {raw} (Yao uses {DEFAULT_MAX_TURNS}){COMPAT_HINT}"))
        return None
    return raw
