-- The dearest call of a limit key learnt, and its cost probe ended by its holder.
-- KEYS: the budget hash, the key's probe claim.
-- ARGV: the limit key's fleet name, the call's USD ('0' when unknown or never sent), TTL, the probe
--   claim's token ('' none).
-- Returns 1. The dearest only grows; the probe is over when its holder says so (a call that never
-- held the claim cannot end another's).
local field = 'dearest:' .. ARGV[1]
if tonumber(ARGV[2]) > 0 and tonumber(ARGV[2]) > (tonumber(redis.call('HGET', KEYS[1], field)) or 0) then
  redis.call('HSET', KEYS[1], field, ARGV[2])
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
if ARGV[4] ~= '' and redis.call('GET', KEYS[2]) == ARGV[4] then
  redis.call('DEL', KEYS[2])
end
return 1
