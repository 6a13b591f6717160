-- A rate-limit lease released: tokens given back, a 429 or Retry-After cuts the shared rate.
-- Runs after rates_common.lua.
-- KEYS: the state hash, the leases set.
-- ARGV: now ('' for the server's clock), lease id, acquired at, tokens reserved, HTTP status,
--   Retry-After seconds, tokens used ('' when unknown), parameters (JSON).
-- Returns 1.
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
