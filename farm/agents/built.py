"""A sweep's agents and judges, built once per process.

``farm.api.prepare_sweep`` builds every agent and judge of a sweep to check it (a bad manifest,
connector or key is exit 2 before anything runs); an in-process sweep then runs those same
adapters (``farm.sweep.local``). Fleet control's hooks are made from the fleet plan, which reads
the built adapters (their connectors, their keys), so the adapters are built first with a
``LateLimiter`` and no wrapper, and ``hooked`` binds the fleet's limiter to them and wraps them as
``create_agent`` and the judge resolver would have.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from farm.agents.base import Agent
from farm.agents.hooks import AgentHooks
from farm.agents.judge import JudgeResolver, create_judge_resolver
from farm.agents.limiter import NO_LIMITER, LateLimiter
from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.agents.resolve import AgentPool, create_agent


@dataclass(frozen=True)
class BuiltAdapters:
    """Every agent of a sweep by reference, its judges (those its checks name, built), and the
    limiter they were built with, bound once fleet control is known."""

    agents: dict[AgentRef, Agent]
    judges: JudgeResolver
    limiter: LateLimiter

    @classmethod
    def build(cls, refs: Iterable[AgentRef], options: AgentOptions, *, replaying: bool) -> BuiltAdapters:
        """Build each agent of ``refs`` once (the judges are built as the resolver is asked);
        ``replaying``: a replay calls nothing, so a missing secret is no error."""
        limiter = LateLimiter()
        hooks = AgentHooks(limiter=limiter, replaying=replaying)
        agents = {ref: create_agent(ref, options, hooks) for ref in dict.fromkeys(refs)}
        return cls(agents, create_judge_resolver(options, hooks), limiter)

    def hooked(self, options: AgentOptions, hooks: AgentHooks) -> tuple[AgentPool, JudgeResolver]:
        """The agents (as a pool) and judges under ``hooks``: the limiter bound to ``hooks.limiter``,
        each agent and judge wrapped by ``hooks``' wrappers."""
        self.limiter.bind(hooks.limiter or NO_LIMITER)
        wrap = hooks.wrap_agent
        agents = {ref: wrap(agent, ref) if wrap is not None else agent for ref, agent in self.agents.items()}
        return AgentPool(options, hooks, built=agents), self.judges.rehooked(hooks)


__all__ = ["BuiltAdapters"]
