"""A plan's paths moved from the submitter's project roots to a worker's copy of its bundle.

A string the plan holds as a path (the agent options' directories, a case's ``base_dir``, an
agent's target and directory) or a case's string that *starts with* a root's path (``script``
references, hooks, a simulator's reference) is rewritten to the same place under the copy; a
``cmd:`` agent's command has each root's path replaced wherever it appears; the fleet plan's
agent keys follow their agents. ``source`` (the suite
file reports name) is left as the submitter wrote it. Anything else stays as it is.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.models.bundle import BundleRef
from farm.plan.sweep_plan import PlannedCase, SweepPlan

__all__ = ["Relocation"]


class Relocation:
    """Each root of a bundle (as the submitter saw it) → its directory in the worker's copy."""

    def __init__(self, ref: BundleRef, copy: Path) -> None:
        pairs = [(root, str(copy / ref.place(n))) for n, root in enumerate(ref.roots)]
        self._pairs = sorted(pairs, key=lambda pair: -len(pair[0]))  # the innermost root first

    def path(self, value: str) -> str:
        """``value`` moved when it is a root or lies under one."""
        for old, new in self._pairs:
            if value == old or value.startswith(old + "/"):
                return new + value[len(old):]
        return value

    def text(self, value: str) -> str:
        """Every root's path in ``value`` moved (a command line)."""
        for old, new in self._pairs:
            value = value.replace(old + "/", new + "/")
        return value

    def options(self, options: AgentOptions) -> AgentOptions:
        return dataclasses.replace(options, cwd=self.path(options.cwd), agents_root=self.path(options.agents_root),
                                   connectors_root=self.path(options.connectors_root))

    def agent(self, ref: AgentRef) -> AgentRef:
        target = self.text(ref.target) if ref.kind == "command" else self.path(ref.target)
        return dataclasses.replace(ref, target=target, base_dir=self.path(ref.base_dir))

    def plan(self, plan: SweepPlan) -> SweepPlan:
        """The options' directories moved, and the fleet plan's agents (``agent_ref_key``, which holds
        the agent's target) named as the moved agents are: their prices, limits and budget hold."""
        fleet = plan.fleet.model_copy(update={
            "agent_keys": {self._ref_key(key): value for key, value in plan.fleet.agent_keys.items()},
            "unmetered": [self._ref_key(key) for key in plan.fleet.unmetered]})
        return plan.model_copy(update={"options": self.options(plan.options), "fleet": fleet})

    def _ref_key(self, key: str) -> str:
        """``agent_ref_key`` of the moved agent, from the key of the agent as planned."""
        kind, sep, rest = key.partition(":")
        return kind + sep + (self.text(rest) if kind == "command" else self.path(rest))

    def planned(self, planned: PlannedCase) -> PlannedCase:
        data = planned.case.model_dump(mode="json")
        source = data.pop("source", None)
        moved = self._strings(data)
        if source is not None:
            moved["source"] = source
        case = type(planned.case).model_validate(moved)
        return planned.model_copy(update={"case": case, "agent": self.agent(planned.agent)})

    def _strings(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.path(value)
        if isinstance(value, dict):
            return {key: self._strings(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._strings(item) for item in value]
        return value
