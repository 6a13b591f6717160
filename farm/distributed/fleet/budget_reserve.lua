-- A budget reservation checked and taken at once (two workers never both take the last of it).
-- KEYS: the budget hash.
-- ARGV: USD, tokens, max USD ('' none), max tokens ('' none), TTL, the probing field of the key
--   whose cost the call probes ('' none: it is no probe).
-- Returns 1 when reserved, 0 when refused (the budget is then marked exhausted).
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
if ARGV[6] ~= '' then redis.call('HINCRBY', KEYS[1], ARGV[6], 1) end
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
