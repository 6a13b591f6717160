-- A lease renewed, only by its holder.
-- KEYS: the lease. ARGV: its holder's token, milliseconds.
-- Returns 1 when the holder still had it, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
