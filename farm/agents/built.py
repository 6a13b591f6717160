"""A sweep's agents and judges, built once per process.

``farm.api.prepare_sweep`` builds every agent and judge of a sweep to check it (a bad manifest,
connector or key is exit 2 before anything runs); an in-process sweep then runs those same
adapters (``farm.sweep.local``). Fleet control's hooks are made from the fleet plan, which reads
the built adapters (their connectors, their keys), so the adapters are built first with a
``LateLimiter`` and no wrapper, and ``hooked`` binds the fleet's limiter to them and wraps them as
``create_agent`` and the judge resolver would have.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from farm.agents.base import Agent
from farm.agents.hooks import AgentHooks
from farm.agents.judge import JudgeResolver, create_judge_resolver
from farm.agents.limiter import NO_LIMITER, LateLimiter
from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.agents.registry import AdapterSpec
from farm.agents.resolve import AgentPool, adapter_spec, create_agent
from farm.agents.retry import attempts_from_env
from farm.errors import AgentResolutionError
from farm.models import Case


@dataclass(frozen=True)
class BuiltAdapters:
    """Every agent of a sweep by reference, its judges (those its checks name, built), and the
    limiter they were built with, bound once fleet control is known."""

    agents: dict[AgentRef, Agent]
    specs: dict[AgentRef, AdapterSpec]
    """What each agent was built from (its manifest: fleet control reads its declared limits)."""
    judges: JudgeResolver
    limiter: LateLimiter

    @classmethod
    def build(cls, refs: Iterable[AgentRef], options: AgentOptions, *, replaying: bool) -> BuiltAdapters:
        """Build each agent of ``refs`` once (the judges are built as the resolver is asked);
        ``replaying``: a replay calls nothing, so a missing secret is no error."""
        limiter = LateLimiter()
        hooks = AgentHooks(limiter=limiter, replaying=replaying)
        agents: dict[AgentRef, Agent] = {}
        specs: dict[AgentRef, AdapterSpec] = {}
        for ref in dict.fromkeys(refs):  # each manifest read once
            specs[ref] = adapter_spec(ref, options)
            agents[ref] = create_agent(ref, options, hooks, spec=specs[ref])
        return cls(agents, specs, create_judge_resolver(options, hooks), limiter)

    @classmethod
    def checked(cls, refs: Iterable[AgentRef], judges: Mapping[str | None, Case], options: AgentOptions, *,
                replaying: bool, here: bool) -> BuiltAdapters:
        """``build``, and every judge of ``judges`` (a use → a case naming it), so that a bad
        manifest, connector or key is exit 2 before anything runs. ``here``: the sweep calls them
        in this process; else they are only checked, and their HTTP client is not loaded
        (``client_deferred``)."""
        with _client_here_or_deferred(here), AgentHooks(replaying=replaying).building():
            built = cls.build(refs, options, replaying=replaying)
            for use, case in judges.items():
                try:
                    built.judges(use)
                except AgentResolutionError as exc:
                    where = f"{case.source}:{case.line}" if case.line else case.source or case.id
                    raise AgentResolutionError(f"{where}: judge {use or '(default)'}: {exc.message}") from None
            attempts_from_env(4)  # a bad FARM_RETRY_ATTEMPTS is a settings error, not a failure in every run
        return built

    def hooked(self, options: AgentOptions, hooks: AgentHooks) -> tuple[AgentPool, JudgeResolver]:
        """The agents (as a pool) and judges under ``hooks``: the limiter bound to ``hooks.limiter``,
        each agent and judge wrapped by ``hooks``' wrappers."""
        self.limiter.bind(hooks.limiter or NO_LIMITER)
        wrap = hooks.wrap_agent
        agents = {ref: wrap(agent, ref) if wrap is not None else agent for ref, agent in self.agents.items()}
        return AgentPool(options, hooks, built=agents), self.judges.rehooked(hooks)


def _client_here_or_deferred(here: bool) -> contextlib.AbstractContextManager[None]:
    """Nothing when the agents are called here, else ``client_deferred``: the transport module is
    imported only by a sweep that builds HTTP agents it will not call (a plain sweep never does)."""
    if here:
        return contextlib.nullcontext()
    from farm.agents.transport import client_deferred

    return client_deferred()


__all__ = ["BuiltAdapters"]
