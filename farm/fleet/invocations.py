"""Rate limits for agents whose calls never pass the transport: python and command agents (SPEC 15).

A ``py:`` or ``cmd:`` agent makes no HTTP attempt for the limiter seam to admit, so the agent
itself is wrapped: each invocation (one per turn) is one call of the agent's key, granted by the
same ``RateLimiter`` as HTTP calls (its request rate, concurrency cap, pauses) and released after
the reply, debiting a token limit (``Ntok/m``) with the usage the reply reports, as for an HTTP
agent without ``max_tokens``. Budgets charge these agents per run (``FleetRuntime.run``).
"""

from __future__ import annotations

from farm.agents.base import Agent, AgentRequest
from farm.fleet.limiter import RateLimiter
from farm.models import Reply
from farm.models.usage import usage_counts
from farm.run.waiting import granted, waiting


class LimitedAgent:
    """``inner`` held to ``key``'s rate limits, one grant per invocation."""

    def __init__(self, inner: Agent, rates: RateLimiter, key: str) -> None:
        self.inner = inner
        self.id = inner.id
        self.rates = rates
        self.key = key

    async def respond(self, request: AgentRequest) -> Reply:
        async with waiting():
            lease = await self.rates.acquire(self.key)
        granted()
        try:
            reply = await self.inner.respond(request)
        except BaseException:
            await lease.release(status=None, retry_after_s=None, usage=None)
            raise
        await lease.release(status=200, retry_after_s=None, usage=usage_counts(reply.usage))
        return reply

    async def aclose(self) -> None:
        await self.inner.aclose()


__all__ = ["LimitedAgent"]
