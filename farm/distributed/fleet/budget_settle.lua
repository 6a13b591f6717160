-- A reservation settled: what it held given back, what the call spent added.
-- KEYS: the budget hash.
-- ARGV: the reservation's USD and tokens negated, spent USD, spent tokens, TTL. The negation is
--   Python's: Lua's -tonumber('0') is -0, which HINCRBY refuses (and a large count would be sent
--   as 1e+15), so a call that reserved nothing failed its settle. Then the probing field of the key
--   whose cost the call probed ('' none).
-- Returns 1.
redis.call('HINCRBYFLOAT', KEYS[1], 'reserved_usd', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'reserved_tokens', ARGV[2])
redis.call('HINCRBYFLOAT', KEYS[1], 'spent_usd', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'spent_tokens', ARGV[4])
if ARGV[6] ~= '' then redis.call('HINCRBY', KEYS[1], ARGV[6], -1) end
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
