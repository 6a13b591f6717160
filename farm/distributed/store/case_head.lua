-- Put before settle.lua and store_run.lua (farm.distributed.store.lua), after the line that
-- defines CASE_HEAD_BITS (the settled bitfield's counters, in bits: farm.distributed.store.lua).
-- KEYS[2]: the sweep's cases-done set. ARGV[3]: the case id; ARGV[#ARGV]: the case's planned runs.
-- is the case aggregated already? Asked only of a complete case and a call that did not settle
-- the run (one that did fires the aggregate whatever the answer: ``Settled.fires``)
local function barrier_done(settled, first)
  if first == 0 and tonumber(ARGV[#ARGV]) <= settled then return redis.call('SISMEMBER', KEYS[2], ARGV[3]) end
  return 0
end
