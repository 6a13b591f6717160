-- A run stored once: set if absent, its bit set in the case's settled bitfield, its event streamed.
-- Runs after case_head.lua (CASE_HEAD_BITS, barrier_done).
-- KEYS: the run key, the cases-done set, the case's settled bitfield, the running hash, the
--   sweep's settled counter (the publishing window's measure; runs stored = it minus the dropped
--   counter), the stream, the sweep's dropped counter.
-- ARGV: RunResult JSON, TTL, case id, 1 if the run passed else 0, run number, the run's running
--   field (its marker goes: the run is over), the case's planned runs.
-- Returns {1 when counted, runs counted, runs passed of the case} followed by settle.lua's four
-- values; TTLs as there. Common path, inside: SET NX, HDEL, XADD, BITFIELD, INCR (the stream
-- entry's id, a timestamp, is the sweep's sign of life).
local offset = CASE_HEAD_BITS + tonumber(ARGV[5])
-- SET NX is the first write: while Redis refuses writes for memory the script stops here,
-- before any other write (one write lets a script's later commands past maxmemory)
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  redis.call('HDEL', KEYS[4], ARGV[6])
  local settled = redis.call('BITFIELD', KEYS[3], 'GET', 'u32', '#0')[1]
  return {0, 0, 0, 0, settled, barrier_done(settled, 0), 0}
end
redis.call('HDEL', KEYS[4], ARGV[6])
redis.call('XADD', KEYS[6], '*', 'type', 'result', 'data', ARGV[1])
local got = redis.call('BITFIELD', KEYS[3], 'SET', 'u1', offset, 1, 'INCRBY', 'u32', '#0', 1,
                       'INCRBY', 'u32', '#1', 1, 'INCRBY', 'u32', '#2', tonumber(ARGV[4]))
local before, settled, count = got[1], got[2], 0
if before == 1 then
  -- settled before as dropped (a stop raced this run): still settled once; no longer a drop
  settled = redis.call('BITFIELD', KEYS[3], 'INCRBY', 'u32', '#0', -1)[1]
  if redis.call('EXISTS', KEYS[7]) == 1 then redis.call('DECR', KEYS[7]) end  -- never a key without TTL
else
  if settled == 1 then redis.call('EXPIRE', KEYS[3], ARGV[2]) end
  count = redis.call('INCR', KEYS[5])
  if count == 1 then redis.call('EXPIRE', KEYS[5], ARGV[2]) end
end
return {1, got[3], got[4], 1 - before, settled, barrier_done(settled, 1 - before), count}
