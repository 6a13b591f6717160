-- A judge verdict looked up, or the right to ask the judge claimed (single flight).
-- KEYS: the verdict key.
-- ARGV: this caller's claim, its TTL in ms.
-- Returns the value found (a verdict or someone's claim), or nil when this caller now holds the claim.
local found = redis.call('GET', KEYS[1])
if found then return found end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
