"""A distributed sweep's budget, shared by every worker: ``farm.fleet.budget`` in two Lua scripts.

The hash ``farm:sweep:{id}:budget`` holds reserved and spent USD and tokens, the exhausted
mark and the dearest call of each limit key settled so far (``dearest:{key}``: every process's
estimate); checking and taking a reservation is one atomic script, so two workers can never both
take the last of a budget; ``probing:{key}`` counts the key's probes not settled (``paid_usd``).
``farm:sweep:{id}:budget-probe:{key}`` is the one call of a key that
probes its cost before any settled, fleet-wide. No library offers reserve-then-settle accounting on Redis, hence
the Lua (a dozen lines).
"""

from __future__ import annotations

import uuid

from farm.distributed.fleet.client import LoopClients, script_arg
from farm.distributed.store import keys
from farm.distributed.store.lua import lua_script
from farm.fleet.budget import BudgetState, Reservation
from farm.plan.fleet import BudgetLimit
from farm.plan.rate_specs import fleet_name
from farm.settings import DEFAULT_RESULT_TTL_S

RESERVE_LUA = lua_script("farm.distributed.fleet", "budget_reserve.lua")
"""A reservation checked and taken at once; refused, the budget is marked exhausted."""
SETTLE_LUA = lua_script("farm.distributed.fleet", "budget_settle.lua")
"""A reservation settled: what it held given back, what the call spent added."""
LEARN_LUA = lua_script("farm.distributed.fleet", "budget_learn.lua")
"""The dearest call of a limit key learnt; its cost probe ended by its holder."""


PROBING = "probing:"
"""The hash's count of a key's probes not settled (``Reservation.probe``), by the key's fleet name."""


def paid_usd(found: dict[str, str]) -> tuple[float, int]:
    """What a sweep's budget hash says was paid, in USD and tokens: the calls settled, those still
    reserved (a killed worker's answers died: each counts at its reservation's price), and each
    probe not settled at its key's dearest call (it reserved $0; CI once saw the report a call
    short when a worker died after the probe's answer taught the fleet its cost, before it settled)."""
    usd = float(found.get("spent_usd", 0)) + max(0.0, float(found.get("reserved_usd", 0)))
    for field, count in found.items():
        if field.startswith(PROBING) and int(count) > 0:
            usd += int(count) * float(found.get("dearest:" + field.removeprefix(PROBING), 0))
    return usd, int(found.get("spent_tokens", 0)) + max(0, int(found.get("reserved_tokens", 0)))


class RedisBudgetBackend:
    """Sweeps' budgets in Redis, kept as long as the sweep's results (``FARM_RESULT_TTL``)."""

    def __init__(self, url: str, *, clients: LoopClients | None = None, ttl_s: int | None = None) -> None:
        self.clients = clients or LoopClients(url)
        self.ttl_s = ttl_s or DEFAULT_RESULT_TTL_S

    async def reserve(self, sweep_id: str, limit: BudgetLimit, usd: float, tokens: int,
                      probe: str | None = None) -> bool:
        taken = await self.clients.run_script(
            RESERVE_LUA, [keys.budget_key(sweep_id)],
            [repr(float(usd)), int(tokens), script_arg(limit.max_usd), script_arg(limit.max_tokens), self.ttl_s,
             _probing(probe)],
        )
        return bool(int(taken))

    async def settle(self, sweep_id: str, reservation: Reservation, usd: float, tokens: int) -> None:
        await self.clients.run_script(
            SETTLE_LUA, [keys.budget_key(sweep_id)],
            [repr(0.0 - float(reservation.usd)), str(-int(reservation.tokens)), repr(float(usd)), str(int(tokens)),
             self.ttl_s, _probing(reservation.probe)],
        )

    async def state(self, sweep_id: str) -> BudgetState:
        client = self.clients.client()
        found = await self.clients.call(lambda: client.hgetall(keys.budget_key(sweep_id)))
        return BudgetState(
            spent_usd=float(found.get("spent_usd", 0)), reserved_usd=float(found.get("reserved_usd", 0)),
            spent_tokens=int(found.get("spent_tokens", 0)), reserved_tokens=int(found.get("reserved_tokens", 0)),
            exhausted="exhausted" in found,
        )

    async def dearest(self, sweep_id: str, key: str) -> float | None:
        client = self.clients.client()
        found = await self.clients.call(lambda: client.hget(keys.budget_key(sweep_id), f"dearest:{fleet_name(key)}"))
        return None if found is None else float(found)

    async def claim_probe(self, sweep_id: str, key: str, ttl_s: float) -> str | None:
        client = self.clients.client()
        name, token = keys.budget_probe_key(sweep_id, key), uuid.uuid4().hex
        taken = await self.clients.call(lambda: client.set(name, token, nx=True, px=max(1, int(ttl_s * 1000))))
        return token if taken else None

    async def learn(self, sweep_id: str, key: str, usd: float | None, probe_token: str | None = None) -> None:
        await self.clients.run_script(
            LEARN_LUA, [keys.budget_key(sweep_id), keys.budget_probe_key(sweep_id, key)],
            [fleet_name(key), repr(float(usd or 0.0)), self.ttl_s, probe_token or ""])

    async def aclose(self) -> None:
        await self.clients.aclose()


def _probing(probe: str | None) -> str:
    return "" if probe is None else PROBING + fleet_name(probe)
