-- A run settled without being stored (dropped), or a stored run's barrier looked at again.
-- Runs after case_head.lua (CASE_HEAD_BITS, barrier_done).
-- KEYS: the case's settled bitfield, the cases-done set, the sweep's settled counter, the running
--   hash, the activity key, the sweep's dropped counter.
-- ARGV: run number, TTL, case id, the run's running field ('' for runs never started: nothing to
--   clear, no sign of life), epoch now, the case's planned runs.
-- Returns {1 when this call settled the run, runs of the case settled, 1 when the case is
-- aggregated already (asked only of a complete case by a call that did not settle the run, else
-- 0), runs of the sweep settled when this call settled the run else 0}. A key's TTL is set once,
-- by the call that creates it (its first run, its first count), not again per run: TTLs measure
-- from a sweep's first results, which the plan's outlives. A run settled here writes the activity
-- key (a drop, or a redelivered stored run clearing its marker): a stored run's sign of life is
-- its stream entry, a started run's its marker.
local offset = CASE_HEAD_BITS + tonumber(ARGV[1])
local before = redis.call('BITFIELD', KEYS[1], 'SET', 'u1', offset, 1)[1]
local settled, count = 0, 0
if before == 0 then
  settled = redis.call('BITFIELD', KEYS[1], 'INCRBY', 'u32', '#0', 1)[1]
  if settled == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
  count = redis.call('INCR', KEYS[3])
  if count == 1 then redis.call('EXPIRE', KEYS[3], ARGV[2]) end
  if redis.call('INCR', KEYS[6]) == 1 then redis.call('EXPIRE', KEYS[6], ARGV[2]) end
else
  settled = redis.call('BITFIELD', KEYS[1], 'GET', 'u32', '#0')[1]
end
if ARGV[4] ~= '' then
  redis.call('HDEL', KEYS[4], ARGV[4])
  redis.call('SET', KEYS[5], ARGV[5], 'EX', ARGV[2])
end
return {1 - before, settled, barrier_done(settled, 1 - before), count}
