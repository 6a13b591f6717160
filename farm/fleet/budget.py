"""``--budget USD`` and ``--max-tokens N`` (SPEC 13): reserve before each call, settle after.

Each call reserves the most it can cost (its token estimate at the dearer of its input and
output prices) and its token estimate; the reservation is refused when spent + reserved + it
would pass a limit. The first refusal marks the sweep's budget exhausted, so every later
reservation is refused too and the sweep stops (``BudgetExhaustedError``: ``metadata.stopped =
"budget"``, exit 4); only calls already in flight still settle, so the overshoot is at most
what they use beyond their reservations. Settling replaces a reservation by the call's real
cost and tokens (a cost that cannot be known keeps the reservation as spent).

``LocalBudgetBackend`` keeps sweeps' budgets in this process; ``farm.distributed.fleet.budget``
shares one among every worker of a distributed sweep.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
import uuid
from dataclasses import dataclass, replace
from typing import Protocol

from farm.errors import BudgetExhaustedError
from farm.plan.fleet import BudgetLimit
from farm.run.waiting import QueueWaitError


@dataclass(frozen=True)
class Reservation:
    usd: float
    tokens: int
    probe: str | None = None
    """The limit key whose cost this call probes (it reserved $0, its cost unknown): until it
    settles, a report counts it at the key's dearest call (its process may die with it paid)."""


@dataclass
class BudgetState:
    """A sweep's budget as it stands; ``exhausted`` once a reservation was refused."""

    spent_usd: float = 0.0
    reserved_usd: float = 0.0
    spent_tokens: int = 0
    reserved_tokens: int = 0
    exhausted: bool = False

    def admits(self, limit: BudgetLimit, usd: float, tokens: int) -> bool:
        if limit.max_usd is not None and self.spent_usd + self.reserved_usd + usd > limit.max_usd:
            return False
        return limit.max_tokens is None or self.spent_tokens + self.reserved_tokens + tokens <= limit.max_tokens


class BudgetBackend(Protocol):
    """Where sweeps' budgets live: this process, or Redis for a distributed sweep."""

    async def reserve(self, sweep_id: str, limit: BudgetLimit, usd: float, tokens: int,
                      probe: str | None = None) -> bool:
        """Take the reservation, or refuse it (and mark the budget exhausted); ``probe``: the
        limit key whose cost the call probes (``Reservation.probe``)."""
        ...

    async def settle(self, sweep_id: str, reservation: Reservation, usd: float, tokens: int) -> None:
        """Replace a reservation by what the call really spent."""
        ...

    async def state(self, sweep_id: str) -> BudgetState: ...

    async def dearest(self, sweep_id: str, key: str) -> float | None:
        """The dearest call of ``key`` settled so far by any process of the sweep (None: none yet)."""
        ...

    async def claim_probe(self, sweep_id: str, key: str, ttl_s: float) -> str | None:
        """Become the one call of ``key`` that probes its cost (for ``ttl_s`` at most: a prober that
        dies lets another probe): the claim's token, or None while another probes."""
        ...

    async def learn(self, sweep_id: str, key: str, usd: float | None, probe_token: str | None = None) -> None:
        """A call of ``key`` settled at ``usd`` (None: unknown, or never sent): the dearest so far
        is at least that; the probe is over when ``probe_token`` is the claim's (only its holder
        ends it: a call that never held it must not release another's live probe)."""
        ...


class LocalBudgetBackend:
    """Budgets of the sweeps run in this process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, BudgetState] = {}
        self._dearest: dict[tuple[str, str], float] = {}
        self._probing: dict[tuple[str, str], str] = {}

    async def reserve(self, sweep_id: str, limit: BudgetLimit, usd: float, tokens: int,
                      probe: str | None = None) -> bool:
        with self._lock:  # one process: a probe cannot die unsettled without the sweep (no count kept)
            state = self._states.setdefault(sweep_id, BudgetState())
            if state.exhausted or not state.admits(limit, usd, tokens):
                state.exhausted = True
                return False
            state.reserved_usd += usd
            state.reserved_tokens += tokens
            return True

    async def settle(self, sweep_id: str, reservation: Reservation, usd: float, tokens: int) -> None:
        with self._lock:
            state = self._states.setdefault(sweep_id, BudgetState())
            state.reserved_usd -= reservation.usd
            state.reserved_tokens -= reservation.tokens
            state.spent_usd += usd
            state.spent_tokens += tokens

    async def state(self, sweep_id: str) -> BudgetState:
        with self._lock:
            found = self._states.get(sweep_id, BudgetState())
            return replace(found)

    async def dearest(self, sweep_id: str, key: str) -> float | None:
        with self._lock:
            return self._dearest.get((sweep_id, key))

    async def claim_probe(self, sweep_id: str, key: str, ttl_s: float) -> str | None:
        with self._lock:  # one process: a prober cannot die without this process (no expiry needed)
            if (sweep_id, key) in self._probing:
                return None
            token = self._probing[(sweep_id, key)] = uuid.uuid4().hex
            return token

    async def learn(self, sweep_id: str, key: str, usd: float | None, probe_token: str | None = None) -> None:
        with self._lock:
            if probe_token is not None and self._probing.get((sweep_id, key)) == probe_token:
                del self._probing[(sweep_id, key)]
            if usd is not None and usd > 0:
                self._dearest[(sweep_id, key)] = max(usd, self._dearest.get((sweep_id, key), 0.0))


PROBE_POLL_S = 0.02
"""How often a call whose cost cannot be estimated yet looks whether its key's probe settled."""


class Budget:
    """One sweep's budget over a backend.

    A call reserves at least the dearest call of its key settled so far by the sweep, in any
    process of the fleet (a connector's ``max_tokens`` bounds its most; without one, only this
    bounds it). A call that states no tokens at all (an HTTP agent) reserves that estimate, and
    until one has settled, the key's calls go one at a time fleet-wide (the first is the probe; the
    others wait for a slot, which is queueing, not running): 32 calls in flight at once can no
    longer each reserve $0 and overspend 4x, nor can each worker process probe at $0 (issue 37: 11
    calls for a $0.10 budget at $0.01). The bound: spend <= budget + what the calls in flight cost
    beyond their reservations, so with costs that do not grow, spend <= budget; no call starts
    once the budget cannot cover its estimate.
    """

    def __init__(self, backend: BudgetBackend, sweep_id: str, limit: BudgetLimit, *,
                 probe_ttl_s: float = 660.0) -> None:
        self.backend = backend
        self.sweep_id = sweep_id
        self.limit = limit
        self.probe_ttl_s = probe_ttl_s
        """How long a probe may stay unsettled before another call probes (its prober died)."""
        self._lock = threading.Lock()
        self._dearest: dict[str, float] = {}
        """What this process learned (costs that do not grow need no round trip once known)."""

    async def estimate(self, key: str, *, probe: bool = True, max_wait_s: float = math.inf) -> float:
        """What a call of ``key`` of unknown most cost reserves (``estimate_probe``'s figure)."""
        return (await self.estimate_probe(key, probe=probe, max_wait_s=max_wait_s))[0]

    async def estimate_probe(self, key: str, *, probe: bool = True, max_wait_s: float = math.inf
                             ) -> tuple[float, str | None]:
        """What a call of ``key`` of unknown most cost reserves: the dearest settled so far; before
        one settled, 0 for the key's probe (with its claim's token, for ``learn``) while the others
        wait (``probe``), else 0 at once.

        Raises:
            QueueWaitError: the probe did not settle within ``max_wait_s`` (``--max-queue-wait``).
        """
        give_up = time.monotonic() + max_wait_s
        while True:
            with self._lock:
                known = self._dearest.get(key)
            if known is not None:
                return known, None
            shared = await self.backend.dearest(self.sweep_id, key)
            if shared is not None:
                with self._lock:
                    self._dearest[key] = max(shared, self._dearest.get(key, 0.0))
                return shared, None
            if not probe:
                return 0.0, None
            token = await self.backend.claim_probe(self.sweep_id, key, self.probe_ttl_s)
            if token is not None:
                return 0.0, token
            if time.monotonic() > give_up:
                raise QueueWaitError(f"budget: no estimate of a call of {key!r} within --max-queue-wait "
                                     f"{max_wait_s:g}s (its first call has not settled)")
            await asyncio.sleep(PROBE_POLL_S)

    async def learn(self, key: str, usd: float | None, probe_token: str | None = None) -> None:
        """A call of ``key`` settled at ``usd``: later estimates are at least that, fleet-wide (an
        unknown or free call teaches nothing; the next call probes again). ``probe_token``: the
        probe's claim, ended here by its holder only."""
        if usd is not None and usd > 0:
            with self._lock:
                self._dearest[key] = max(usd, self._dearest.get(key, 0.0))
        await self.backend.learn(self.sweep_id, key, usd, probe_token)

    async def reserve(self, usd: float, tokens: int, *, probe: str | None = None) -> Reservation:
        """Reserve a call's most (``probe``: the key whose cost this call probes).

        Raises:
            BudgetExhaustedError: the reservation would pass the budget (or one already did).
        """
        reservation = Reservation(max(0.0, usd), max(0, tokens), probe)
        if not await self.backend.reserve(self.sweep_id, self.limit, reservation.usd, reservation.tokens, probe):
            raise BudgetExhaustedError(
                f"budget of {self.limit.describe()} reached: the next call could exceed it "
                f"(it reserves ${reservation.usd:.6f}, {reservation.tokens} tokens); no new calls"
            )
        return reservation

    async def settle(self, reservation: Reservation, usd: float | None, tokens: int | None) -> None:
        """The call is over: it cost ``usd`` and used ``tokens`` (None: unknown, the reservation stays spent)."""
        await self.backend.settle(self.sweep_id, reservation, reservation.usd if usd is None else usd,
                                  reservation.tokens if tokens is None else tokens)

    async def state(self) -> BudgetState:
        return await self.backend.state(self.sweep_id)
