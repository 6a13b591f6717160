"""The fleet-wide rate-limit backend: ``farm.fleet.ratestate``'s algorithm as two Lua scripts.

Every worker process of every sweep on one store shares a key's state (providers limit per API
key, not per sweep): ``farm:fleet:limit:{key}`` (hash) and ``farm:fleet:leases:{key}`` (sorted
set of leases by expiry). Acquiring and releasing are one script each, so the four gates
(pause, concurrency, GCRA requests, token bucket) are checked and taken atomically; times come
from the Redis server's clock (``TIME``), so the processes' clocks need not agree.

Why hand-written Lua and not a library: ``limits`` (async Redis storage) has fixed, moving and
sliding *window* counters only, which let a whole window's quota through in one burst (600/m
as 600 calls in the first second); it has no GCRA, no way to give back part of a reserved cost,
no expiring leases for a concurrency cap, and no shared rate that a 429 can cut. ``aiolimiter``
and ``pyrate-limiter``'s in-memory buckets do not share state between processes. Neither lets
the same algorithm run in-process and in Redis, which the conformance test relies on. No Redis
module is needed (Redis ≥ 5, ``cjson`` and ``TIME`` in scripts).
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict
from typing import Any

from farm.distributed.fleet.client import LoopClients, script_arg
from farm.distributed.store import keys
from farm.fleet.ratestate import (
    CONCURRENCY_POLL_S,
    EARLY_S,
    TOKEN_BUCKET_S,
    AdaptivePolicy,
    Decision,
)
from farm.plan.rate_specs import RateLimit

_COMMON_LUA = """
local function str(x) return string.format('%.17g', x) end
local function clock(given)
  local now = tonumber(given)
  if now then return now end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
local function factor(cut_factor, pause_until, p, now)
  if cut_factor >= 1 then return 1 end
  return math.min(1, cut_factor + p.recovery_per_s * math.max(0, now - pause_until) / 1000)
end
local function tokens_now(level, level_at, p, f, now)
  local capacity = p.tokens_per_s * p.bucket_s
  if not level then return capacity end
  return math.min(capacity, level + (now - level_at) * p.tokens_per_s * f / 1000)
end
"""

ACQUIRE_LUA = _COMMON_LUA + """
local now = clock(ARGV[1])
local lease, tokens, p = ARGV[2], tonumber(ARGV[3]), cjson.decode(ARGV[4])
local s = redis.call('HMGET', KEYS[1], 'tat', 'level', 'level_at', 'cut_factor', 'pause_until', 'base_conc',
                     'quota_at')
local quota_at = tonumber(s[7])
if quota_at and now - quota_at < p.quota_hold_s * 1000 then return {2, '0', 0} end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local pause_until, base_conc = tonumber(s[5]) or 0, tonumber(s[6]) or 0
local f = factor(tonumber(s[4]) or 1, pause_until, p, now)
local wait = pause_until - now
if p.fair then  -- ratestate._behind: tickets (KEYS[3] by place, KEYS[4] by expiry)
  local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
  if #dead > 0 then redis.call('ZREM', KEYS[3], unpack(dead)); redis.call('ZREM', KEYS[4], unpack(dead)) end
  local mine = redis.call('ZSCORE', KEYS[3], lease)
  local older = mine and redis.call('ZCOUNT', KEYS[3], '-inf', '(' .. mine) or redis.call('ZCARD', KEYS[3])
  if older > 0 then wait = math.max(wait, p.poll_s * 1000) end
end
local cap = nil
if p.concurrency then cap = math.max(1, math.floor(p.concurrency * f))
elseif f < 1 and base_conc > 0 and not p.requests_per_s then cap = math.max(1, math.floor(base_conc * f)) end
if cap and redis.call('ZCARD', KEYS[2]) >= cap then wait = math.max(wait, p.poll_s * 1000) end
local tat, interval = nil, nil
if p.requests_per_s then
  interval = 1000 / (p.requests_per_s * f)
  local early = math.max(interval, p.early_s * 1000)
  tat = tonumber(s[1])
  if not tat or tat < now - early then tat = now + early else tat = math.max(tat, now) end  -- ratestate.next_slot
  wait = math.max(wait, tat - early - now)
end
local need, level = 0, nil
if p.tokens_per_s then
  need = math.min(tokens, math.floor(p.tokens_per_s * p.bucket_s))
  level = tokens_now(tonumber(s[2]), tonumber(s[3]) or 0, p, f, now)
  wait = math.max(wait, (need - level) * 1000 / (p.tokens_per_s * f))
end
if wait > 0 then
  if p.fair then
    if not redis.call('ZSCORE', KEYS[3], lease) then
      redis.call('ZADD', KEYS[3], redis.call('HINCRBY', KEYS[1], 'ticket_seq', 1), lease)
    end
    redis.call('ZADD', KEYS[4], now + wait + p.ticket_grace_s * 1000, lease)
    redis.call('PEXPIRE', KEYS[1], p.state_ttl_ms)
    redis.call('PEXPIRE', KEYS[3], p.state_ttl_ms)
    redis.call('PEXPIRE', KEYS[4], p.state_ttl_ms)
  end
  return {1, str(wait), 0}
end
if p.fair then redis.call('ZREM', KEYS[3], lease); redis.call('ZREM', KEYS[4], lease) end
redis.call('ZADD', KEYS[2], now + p.lease_ttl_s * 1000, lease)
if interval then redis.call('HSET', KEYS[1], 'tat', str(tat + interval)) end
if level then redis.call('HSET', KEYS[1], 'level', str(level - need), 'level_at', str(now)) end
redis.call('PEXPIRE', KEYS[1], p.state_ttl_ms)
redis.call('PEXPIRE', KEYS[2], p.state_ttl_ms)
return {0, str(now), need}
"""
"""KEYS: state hash, leases set, tickets by place, tickets by expiry; ARGV: now (ms, '' for the
server's clock), lease id, tokens wanted, parameters (JSON). Returns {0, acquired_at, tokens
reserved} | {1, wait ms, 0} | {2, 0, 0} (quota exhausted)."""

RELEASE_LUA = _COMMON_LUA + """
local now = clock(ARGV[1])
local lease, acquired_at, reserved = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local status, retry_after, used, p = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), cjson.decode(ARGV[8])
local in_flight = redis.call('ZCARD', KEYS[2])
redis.call('ZREM', KEYS[2], lease)
local s = redis.call('HMGET', KEYS[1], 'level', 'level_at', 'cut_factor', 'cut_at', 'pause_until', 'strikes',
                     'streak_start')
local pause_until = tonumber(s[5]) or 0
local f = factor(tonumber(s[3]) or 1, pause_until, p, now)
if p.tokens_per_s and used then
  local level = tokens_now(tonumber(s[1]), tonumber(s[2]) or 0, p, f, now) + reserved - used
  redis.call('HSET', KEYS[1], 'level', str(math.min(level, p.tokens_per_s * p.bucket_s)), 'level_at',
             str(now))
end
if status == 429 or retry_after then
  if acquired_at >= (tonumber(s[4]) or -math.huge) then
    if f >= 1 then redis.call('HSET', KEYS[1], 'base_conc', in_flight) end
    redis.call('HSET', KEYS[1], 'cut_factor', str(math.max(p.min_factor, f * p.decrease)), 'cut_at',
               str(now))
  end
  local pause = math.min(math.max(retry_after or 0, p.cooldown_s), p.max_pause_s)
  redis.call('HSET', KEYS[1], 'pause_until', str(math.max(pause_until, now + pause * 1000)))
end
if status == 429 then
  local strikes, streak_start = tonumber(s[6]) or 0, tonumber(s[7]) or now
  if strikes == 0 then streak_start = now end
  strikes = strikes + 1
  redis.call('HSET', KEYS[1], 'strikes', strikes, 'streak_start', str(streak_start))
  if strikes >= p.quota_strikes and now - streak_start >= p.quota_streak_s * 1000 then
    redis.call('HSET', KEYS[1], 'quota_at', str(now))
  end
elseif status then
  redis.call('HSET', KEYS[1], 'strikes', 0)
end
redis.call('PEXPIRE', KEYS[1], p.state_ttl_ms)
return 1
"""
"""KEYS: state hash, leases set; ARGV: now ('' for the server's clock), lease id, acquired at,
tokens reserved, HTTP status, Retry-After seconds, tokens used ('' when unknown), parameters."""


@functools.lru_cache(maxsize=256)
def _parameters(limit: RateLimit, policy: AdaptivePolicy) -> str:
    """The scripts' parameters as JSON, with no nulls (``cjson`` decodes null as a true value)."""
    values: dict[str, Any] = {**asdict(limit), **asdict(policy)}
    state_ttl_s = max(policy.lease_ttl_s, policy.quota_hold_s, policy.max_pause_s, 3600.0)
    values.update(early_s=EARLY_S, bucket_s=TOKEN_BUCKET_S, poll_s=CONCURRENCY_POLL_S,
                  state_ttl_ms=int(state_ttl_s * 1000))
    return json.dumps({k: v for k, v in values.items() if v is not None})


class RedisRateBackend:
    """A rate-limit backend whose state every process on the store shares."""

    def __init__(self, url: str, *, clients: LoopClients | None = None) -> None:
        self.clients = clients or LoopClients(url)

    async def try_acquire(self, key: str, limit: RateLimit, policy: AdaptivePolicy, *, tokens: int, lease_id: str,
                          now: float | None = None) -> Decision:
        leases = keys.fleet_leases_key(key)
        code, value, need = await self.clients.run_script(
            ACQUIRE_LUA, [keys.fleet_limit_key(key), leases, f"{leases}:tickets", f"{leases}:ticket-expiry"],
            [script_arg(now), lease_id, tokens, _parameters(limit, policy)],
        )
        if int(code) == 2:
            return Decision(granted=False, quota=True)
        if int(code) == 1:
            return Decision(granted=False, wait_s=float(value) / 1000)
        return Decision(granted=True, acquired_at_ms=float(value), reserved_tokens=int(need))

    async def release(self, key: str, limit: RateLimit, policy: AdaptivePolicy, *, lease_id: str,
                      acquired_at: float, reserved_tokens: int, status: int | None, retry_after_s: float | None,
                      used_tokens: int | None, now: float | None = None) -> None:
        await self.clients.run_script(
            RELEASE_LUA, [keys.fleet_limit_key(key), keys.fleet_leases_key(key)],
            [script_arg(now), lease_id, repr(acquired_at), reserved_tokens, script_arg(status),
             script_arg(retry_after_s), script_arg(used_tokens), _parameters(limit, policy)],
        )

    async def aclose(self) -> None:
        await self.clients.aclose()
