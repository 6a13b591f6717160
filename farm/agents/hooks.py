"""What a process adds to every adapter it builds: objects, never serialised (``AgentOptions`` is the data).

Set where the agent pool and the judges are made (the local executor, a worker thread) and
passed to ``AgentPool``, ``create_agent`` and ``create_judge_resolver``; fleet control's
limiter and record/replay's wrapper reach every adapter through them, none of which changes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from farm.agents.base import Agent
    from farm.agents.limiter import CallLimiter
    from farm.agents.ref import AgentRef
    from farm.checks.base import Judge

AgentWrapper = Callable[["Agent", "AgentRef"], "Agent"]
"""Wraps an agent built for a reference at ``Agent.respond`` level (record/replay, accounting)."""
JudgeWrapper = Callable[[str, "Judge"], "Judge"]
"""Wraps a judge the resolver built, given its name (a connector id or ``agents:<id>``): caching,
record/replay, metering its calls as the judge's."""


@dataclass(frozen=True)
class AgentHooks:
    """The limiter and the wrappers of the adapters a pool or a judge resolver builds."""

    limiter: CallLimiter | None = None
    """Admits every HTTP attempt of every adapter, connector and judge (``farm.agents.transport``);
    None: every attempt at once."""
    wrap_agent: AgentWrapper | None = None
    """Applied to every agent ``create_agent`` builds: the agent under test, ``agents:`` judges
    (unless ``wrap_judge`` is set: it wraps the judge instead), reporter agents."""
    wrap_judge: JudgeWrapper | None = None
    """Applied to every judge ``JudgeResolver`` builds."""
    replaying: bool = False
    """``--replay``: nothing is called, so an unset ``$ENV`` secret is no error (``secrets_optional``)."""

    def building(self) -> contextlib.AbstractContextManager[None]:
        """The context to build adapters in: secrets optional when replaying."""
        from farm.agents.secrets import secrets_optional  # here: secrets imports models, hooks stays light

        return secrets_optional() if self.replaying else contextlib.nullcontext()


NO_HOOKS = AgentHooks()
