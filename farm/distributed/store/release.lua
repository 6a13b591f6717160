-- A key released, only by its holder (a lease; a judge cache claim: farm.distributed.fleet.judge_cache).
-- KEYS: the key. ARGV: its holder's token.
-- Returns 1 when the holder still had it and it is gone, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
