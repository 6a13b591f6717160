-- A sweep's report stored once.
-- KEYS: the report, the stream, the sweeps in flight, then the keys the report is read with later
--   (the stats hash, the cases-done set; with the stream, their TTLs were set once, early: they
--   now run as long as the report's, once per sweep).
-- ARGV: report JSON, TTL, sweep id.
-- Returns 1 when this call stored the report, else 0.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  redis.call('XADD', KEYS[2], '*', 'type', 'finish')
  redis.call('ZREM', KEYS[3], ARGV[3])
  for i = 4, #KEYS do redis.call('EXPIRE', KEYS[i], ARGV[2]) end
  redis.call('EXPIRE', KEYS[2], ARGV[2])
  return 1
end
return 0
