"""The store's atomic steps, as Lua scripts that ``farm.distributed.store.sweep_store.SweepStore`` registers.

Every write that must happen once runs on the Redis server in one step: a run stored
set-if-absent with its bit set in the case's ``settled`` bitmap and its event streamed, a case's
statistics and the report stored once, the leases (publisher, reconciler) renewed and released
only by their holder, the publish cursor moved only forward.
"""

from __future__ import annotations

SETTLE_LUA = """
local before = redis.call('SETBIT', KEYS[1], ARGV[1], 1)
local count, bits = 0, redis.call('BITCOUNT', KEYS[1])
if before == 0 then
  if bits == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
  count = redis.call('INCR', KEYS[3])
  if count == 1 then redis.call('EXPIRE', KEYS[3], ARGV[2]) end
end
if ARGV[4] ~= '' then
  redis.call('HDEL', KEYS[4], ARGV[4])
  redis.call('SET', KEYS[5], ARGV[5], 'EX', ARGV[2])
end
return {1 - before, bits, redis.call('SISMEMBER', KEYS[2], ARGV[3]), count}
"""
"""KEYS: settled bitmap, cases-done set, the sweep's settled counter, running hash, activity key;
ARGV: run number, TTL, case id, the run's running field ('' for runs never started: nothing to
clear, no sign of life), epoch now. Returns (1 when this call settled the run, runs of the case
settled, 1 when the case is aggregated already, runs of the sweep settled when this call settled
the run else 0). A key's TTL is set once, by the call that creates it (its first bit, its first
count), not again per run: TTLs measure from a sweep's first results, which the plan's outlives."""

BEGIN_RUN_LUA = """
local stop = redis.call('GET', KEYS[1])
local stored = redis.call('EXISTS', KEYS[2])
local deaths, duplicate = 0, 0
local raw = redis.call('HGET', KEYS[3], ARGV[1])
if raw then
  local ok, marker = pcall(cjson.decode, raw)
  if ok and type(marker) == 'table' then
    deaths = tonumber(marker['d']) or 0
    if marker['h'] ~= ARGV[2] then
      if redis.call('EXISTS', ARGV[3] .. tostring(marker['h'])) == 1 then
        duplicate = 1
      else
        deaths = deaths + 1
      end
    end
  end
end
if duplicate == 0 then
  redis.call('HSET', KEYS[3], ARGV[1], cjson.encode({t = tonumber(ARGV[5]), h = ARGV[2], d = deaths}))
  redis.call('EXPIRE', KEYS[3], ARGV[4])
end
redis.call('SET', KEYS[4], ARGV[5], 'EX', ARGV[4])
return {stop or '', stored, deaths, duplicate}
"""
"""KEYS: stop key, run key, running hash, activity key; ARGV: the run's running field, this
process's holder token, heartbeat key prefix, TTL, epoch now. The run's marker in the running
hash, ``{"t": started, "h": holder, "d": deaths}``, is its lease (for the reconciler) and its
crash record (``workers.crashes``): a marker of a dead holder means the run was in flight when
that process died (deaths + 1); of a live holder elsewhere, a concurrent duplicate (left as it
is). Returns (stop reason or '', 1 when the run is stored already, deaths, 1 when duplicate)."""

STORE_RUN_LUA = """
local settled = redis.call('SETBIT', KEYS[5], ARGV[5], 1)
local count, bits = 0, redis.call('BITCOUNT', KEYS[5])
if settled == 0 then
  if bits == 1 then redis.call('EXPIRE', KEYS[5], ARGV[2]) end
  count = redis.call('INCR', KEYS[7])
  if count == 1 then redis.call('EXPIRE', KEYS[7], ARGV[2]) end
end
local barrier = {1 - settled, bits, redis.call('SISMEMBER', KEYS[6], ARGV[3]), count}
redis.call('HDEL', KEYS[8], ARGV[6])
redis.call('SET', KEYS[9], ARGV[7], 'EX', ARGV[2])
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  redis.call('XADD', KEYS[2], '*', 'type', 'result', 'data', ARGV[1])
  if redis.call('INCR', KEYS[3]) == 1 then redis.call('EXPIRE', KEYS[3], ARGV[2]) end
  local counted = redis.call('HINCRBY', KEYS[4], ARGV[3] .. ':counted', 1)
  local passed = redis.call('HINCRBY', KEYS[4], ARGV[3] .. ':passed', tonumber(ARGV[4]))
  if counted == 1 then redis.call('EXPIRE', KEYS[4], ARGV[2]) end
  return {1, counted, passed, barrier[1], barrier[2], barrier[3], barrier[4]}
end
return {0, 0, 0, barrier[1], barrier[2], barrier[3], barrier[4]}
"""
"""KEYS: run key, stream, runs-done counter, tally hash, settled bitmap, cases-done set, the
sweep's settled counter (the publishing window's measure), running hash, activity key; ARGV:
RunResult JSON, TTL, case id, 1 if the run passed else 0, run number, the run's running field
(its marker goes: the run is over), epoch now. Returns (1 when counted,
runs counted, runs passed of the case) followed by SETTLE_LUA's four values; TTLs as there (the
tally hash's when one of its cases counts its first run)."""

STORE_CASE_LUA = """
local added = redis.call('SADD', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
if added == 1 and ARGV[2] ~= '' then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  redis.call('EXPIRE', KEYS[2], ARGV[3])
  redis.call('XADD', KEYS[3], '*', 'type', 'case', 'data', ARGV[2])
end
return redis.call('SCARD', KEYS[1])
"""
"""KEYS: cases-done set, stats hash, stream; ARGV: case id, CaseStats JSON ('' when no run
counted), TTL. Returns the number of cases done (the sweep's done-counter)."""

STORE_REPORT_LUA = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  redis.call('XADD', KEYS[2], '*', 'type', 'finish')
  redis.call('ZREM', KEYS[3], ARGV[3])
  return 1
end
return 0
"""
"""KEYS: report, stream, sweeps in flight; ARGV: report JSON, TTL, sweep id. 1 when this call
stored the report."""

RENEW_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
"""KEYS: a lease; ARGV: its holder's token, milliseconds. 1 when the holder still had it."""

RELEASE_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

CURSOR_LUA = """
local cur = tonumber(redis.call('GET', KEYS[1]) or '-1')
local new = tonumber(ARGV[1])
if new > cur then redis.call('SET', KEYS[1], new, 'EX', ARGV[2]) return new end
return cur
"""
"""KEYS: the publish cursor; ARGV: runs published, TTL. The cursor only moves forward (two
publishers racing for a moment both publish the same runs: duplicates are harmless)."""




__all__ = [
    "CURSOR_LUA",
    "RELEASE_LUA",
    "RENEW_LUA",
    "SETTLE_LUA",
    "STORE_CASE_LUA",
    "STORE_REPORT_LUA",
    "STORE_RUN_LUA",
]
