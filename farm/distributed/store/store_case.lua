-- A case's statistics stored once.
-- KEYS: the cases-done set, the stats hash, the stream.
-- ARGV: case id, CaseStats JSON ('' when no run counted), TTL.
-- Returns the number of cases done (the sweep's done-counter). The set's TTL is set once, by the
-- call that creates it; the stats hash's with the plan (keys.SENTINEL).
local added = redis.call('SADD', KEYS[1], ARGV[1])
local done = redis.call('SCARD', KEYS[1])
if added == 1 and done == 1 then redis.call('EXPIRE', KEYS[1], ARGV[3]) end
if added == 1 and ARGV[2] ~= '' then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  redis.call('XADD', KEYS[3], '*', 'type', 'case', 'data', ARGV[2])
end
return done
