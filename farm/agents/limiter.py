"""The limiter seam of every HTTP attempt: what fleet control plugs into the ``Transport``.

Fleet control (issue 13) plugs in here. Every attempt (a retried call is several) asks
``CallLimiter.acquire`` before its request and releases the lease when it ends, whatever the
outcome; the backoff sleeps between attempts hold no lease::

    class CallLimiter(Protocol):
        async def acquire(self, key: str, *, tokens: int = 0) -> CallLease: ...

    class CallLease(Protocol):
        async def release(self, *, status: int | None, retry_after_s: float | None,
                          usage: dict[str, int] | None) -> None: ...

- ``key``: the rate-limit key of the call: the agent id for the agent under test (http,
  neuro-san), the connector id (``openai.gpt-4o``) for prompt agents and connector judges, and
  the judge's ``use`` (``agents:reviewer``) for every call of an ``agents:`` judge
  (``KeyedLimiter``).
- ``tokens``: the caller's estimate of the tokens the call may use: for chat completions a rough
  input estimate plus the connector's ``max_tokens`` when set; 0 otherwise.
- ``status``: the HTTP status, None when no answer came (connection fault, timeout, cancel);
  ``retry_after_s``: the answer's ``Retry-After`` in seconds (seconds or HTTP-date), else None;
  ``usage``: the integer token counts the answer reported (OpenAI ``usage``, neuro-san's token
  accounting), else None.

The default is ``NO_LIMITER``; ``AgentHooks.limiter`` (``farm.agents.hooks``), given to the
agent pool and the judge resolver, injects another for every adapter they build.

A refused call (the sweep's budget, a provider's exhausted quota: a ``FleetStop``) is raised and
also told here (``refused``), to the run's ``RefusalNote`` if fleet control set one
(``REFUSAL_NOTE``, a context variable the run's tasks inherit): adapters, judges and checks turn
exceptions into run errors or equivocal verdicts, so fleet control (``farm.fleet.control``, which
builds on the agents) must not count on the exception reaching it. The transport tells it of a
quota answer (``farm.agents.quota``) whatever limiter the call had.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

from farm.errors import FleetStop

__all__ = ["NO_LIMITER", "REFUSAL_NOTE", "CallLease", "CallLimiter", "KeyedLimiter", "LateLimiter", "RefusalNote",
           "refused"]


class CallLease(Protocol):
    """One admitted HTTP attempt; released once when the attempt ends."""

    async def release(
        self, *, status: int | None, retry_after_s: float | None, usage: dict[str, int] | None
    ) -> None: ...


class CallLimiter(Protocol):
    """Admits HTTP attempts per rate-limit key (see the module docstring)."""

    async def acquire(self, key: str, *, tokens: int = 0) -> CallLease: ...


class _NoLease:
    async def release(
        self, *, status: int | None, retry_after_s: float | None, usage: dict[str, int] | None
    ) -> None:
        return None


class _NoLimiter:
    """Admits every attempt at once: the default."""

    _lease = _NoLease()

    async def acquire(self, key: str, *, tokens: int = 0) -> CallLease:
        return self._lease


NO_LIMITER: CallLimiter = _NoLimiter()


@dataclass(frozen=True)
class KeyedLimiter:
    """Sends every attempt to ``limiter`` under one ``key``: all calls of an ``agents:`` judge."""

    limiter: CallLimiter
    key: str

    async def acquire(self, key: str, *, tokens: int = 0) -> CallLease:
        return await self.limiter.acquire(self.key, tokens=tokens)


class LateLimiter:
    """A limiter bound after the adapters that use it are built: a sweep builds (and so checks)
    its agents and judges before its fleet plan, which reads them, says how their calls are
    limited; the executor then binds the fleet's limiter (``farm.agents.built``). Until bound it
    admits every attempt at once."""

    def __init__(self) -> None:
        self._limiter: CallLimiter = NO_LIMITER

    def bind(self, limiter: CallLimiter) -> None:
        self._limiter = limiter

    async def acquire(self, key: str, *, tokens: int = 0) -> CallLease:
        return await self._limiter.acquire(key, tokens=tokens)


class RefusalNote(Protocol):
    """Where a run's refused calls are noted (fleet control's ``Refusal``)."""

    def refused(self, error: FleetStop, *, answered: bool) -> None: ...


REFUSAL_NOTE: ContextVar[RefusalNote | None] = ContextVar("farm_refusal_note", default=None)
"""The current run's note; None outside a run under fleet control (a refusal then only raises)."""


def refused(error: FleetStop, *, answered: bool = False) -> FleetStop:
    """Note ``error`` in the current run's ``RefusalNote`` (if any) and return it, for the caller to
    raise; ``answered``: the refused call was made (a quota answer), so it is not one made before."""
    note = REFUSAL_NOTE.get()
    if note is not None:
        note.refused(error, answered=answered)
    return error
