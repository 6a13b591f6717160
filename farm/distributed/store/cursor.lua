-- The publish cursor, moved only forward (two publishers racing for a moment both publish the
-- same runs: duplicates are harmless).
-- KEYS: the publish cursor. ARGV: runs published, TTL.
-- Returns the cursor after the call.
local cur = tonumber(redis.call('GET', KEYS[1]) or '-1')
local new = tonumber(ARGV[1])
if new > cur then redis.call('SET', KEYS[1], new, 'EX', ARGV[2]) return new end
return cur
