"""A distributed sweep's budget, shared by every worker: ``farm.fleet.budget`` in two Lua scripts.

The hash ``farm:sweep:{id}:budget`` holds reserved and spent USD and tokens, the exhausted
mark and the dearest call of each limit key settled so far (``dearest:{key}``: every process's
estimate); checking and taking a reservation is one atomic script, so two workers can never both
take the last of a budget. ``farm:sweep:{id}:budget-probe:{key}`` is the one call of a key that
probes its cost before any settled, fleet-wide. No library offers reserve-then-settle accounting on Redis, hence
the Lua (a dozen lines).
"""

from __future__ import annotations

import uuid

from farm.distributed.fleet.client import LoopClients, script_arg
from farm.distributed.store import keys
from farm.fleet.budget import BudgetState, Reservation
from farm.plan.fleet import BudgetLimit
from farm.plan.rate_specs import fleet_name
from farm.settings import DEFAULT_RESULT_TTL_S

RESERVE_LUA = """
local s = redis.call('HMGET', KEYS[1], 'spent_usd', 'reserved_usd', 'spent_tokens', 'reserved_tokens', 'exhausted')
if s[5] then return 0 end
local usd, tokens = tonumber(ARGV[1]), tonumber(ARGV[2])
local max_usd, max_tokens = tonumber(ARGV[3]), tonumber(ARGV[4])
local over_usd = max_usd and (tonumber(s[1]) or 0) + (tonumber(s[2]) or 0) + usd > max_usd
local over_tokens = max_tokens and (tonumber(s[3]) or 0) + (tonumber(s[4]) or 0) + tokens > max_tokens
if over_usd or over_tokens then
  redis.call('HSET', KEYS[1], 'exhausted', 1)
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  return 0
end
redis.call('HINCRBYFLOAT', KEYS[1], 'reserved_usd', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'reserved_tokens', tokens)
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""
"""KEYS: the budget hash; ARGV: USD, tokens, max USD ('' none), max tokens ('' none), TTL.
Returns 1 when reserved, 0 when refused (the budget is then marked exhausted)."""

SETTLE_LUA = """
redis.call('HINCRBYFLOAT', KEYS[1], 'reserved_usd', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'reserved_tokens', ARGV[2])
redis.call('HINCRBYFLOAT', KEYS[1], 'spent_usd', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'spent_tokens', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""
"""KEYS: the budget hash; ARGV: the reservation's USD and tokens negated, spent USD, spent tokens, TTL.
The negation is Python's: Lua's ``-tonumber('0')`` is ``-0``, which HINCRBY refuses (and a large
count would be sent as ``1e+15``), so a call that reserved nothing failed its settle."""


LEARN_LUA = """
local field = 'dearest:' .. ARGV[1]
if tonumber(ARGV[2]) > 0 and tonumber(ARGV[2]) > (tonumber(redis.call('HGET', KEYS[1], field)) or 0) then
  redis.call('HSET', KEYS[1], field, ARGV[2])
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
if ARGV[4] ~= '' and redis.call('GET', KEYS[2]) == ARGV[4] then
  redis.call('DEL', KEYS[2])
end
return 1
"""
"""KEYS: the budget hash, the key's probe claim; ARGV: the limit key's fleet name, the call's USD
('0' when unknown or never sent), TTL, the probe claim's token ('' none). The dearest only grows;
the probe is over when its holder says so (a call that never held the claim cannot end another's)."""


class RedisBudgetBackend:
    """Sweeps' budgets in Redis, kept as long as the sweep's results (``FARM_RESULT_TTL``)."""

    def __init__(self, url: str, *, clients: LoopClients | None = None, ttl_s: int | None = None) -> None:
        self.clients = clients or LoopClients(url)
        self.ttl_s = ttl_s or DEFAULT_RESULT_TTL_S

    async def reserve(self, sweep_id: str, limit: BudgetLimit, usd: float, tokens: int) -> bool:
        taken = await self.clients.run_script(
            RESERVE_LUA, [keys.budget_key(sweep_id)],
            [repr(float(usd)), int(tokens), script_arg(limit.max_usd), script_arg(limit.max_tokens), self.ttl_s],
        )
        return bool(int(taken))

    async def settle(self, sweep_id: str, reservation: Reservation, usd: float, tokens: int) -> None:
        await self.clients.run_script(
            SETTLE_LUA, [keys.budget_key(sweep_id)],
            [repr(0.0 - float(reservation.usd)), str(-int(reservation.tokens)), repr(float(usd)), str(int(tokens)),
             self.ttl_s],
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
