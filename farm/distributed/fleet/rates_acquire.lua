-- A rate-limit lease acquired, or how long to wait (farm.fleet.ratestate's gates, atomically).
-- Runs after rates_common.lua.
-- KEYS: the state hash, the leases set, the tickets by place, the tickets by expiry.
-- ARGV: now (ms, '' for the server's clock), lease id, tokens wanted, parameters (JSON).
-- Returns {0, acquired_at, tokens reserved} | {1, wait ms, 0} | {2, 0, 0} (quota exhausted).
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
