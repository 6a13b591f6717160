"""The store's atomic steps, as Lua scripts that ``farm.distributed.store.sweep_store.SweepStore`` registers.

Every write that must happen once runs on the Redis server in one step: a run stored
set-if-absent with its bit set in the case's ``settled`` bitfield and its event streamed, a case's
statistics and the report stored once, the leases (publisher, reconciler) renewed and released
only by their holder, the publish cursor moved only forward.
"""

from __future__ import annotations

CASE_HEAD_BITS = 96
"""A case's ``settled`` key is a bitfield: three unsigned 32-bit counters (``#0`` runs settled,
``#1`` runs counted, ``#2`` runs passed), then run n's settled bit at ``CASE_HEAD_BITS + n``. One
``BITFIELD`` call sets a run's bit and moves the counters (issue 32: it was SETBIT, BITCOUNT and
two HINCRBY of a tally hash)."""

_BARRIER = """
-- is the case aggregated already? Asked only of a complete case and a call that did not settle
-- the run (one that did fires the aggregate whatever the answer: ``Settled.fires``)
local function barrier_done(settled, first)
  if first == 0 and tonumber(ARGV[#ARGV]) <= settled then return redis.call('SISMEMBER', KEYS[2], ARGV[3]) end
  return 0
end
"""

_OFFSET = f"local offset = {CASE_HEAD_BITS} + tonumber(ARGV[%d])\n"
"""A run's bit in its case's bitfield, after the counters (ARGV[n] is the run number)."""

SETTLE_LUA = _BARRIER + _OFFSET % 1 + """
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
"""
"""A run settled without being stored (dropped), or a stored run's barrier looked at again. KEYS:
the case's settled bitfield, cases-done set, the sweep's settled counter, running hash, activity
key, the sweep's dropped counter; ARGV: run number, TTL, case id, the run's running field ('' for
runs never started: nothing to clear, no sign of life), epoch now, the case's planned runs.
Returns (1 when this call settled the run, runs of the case settled, 1 when the case is
aggregated already — asked only of a complete case by a call that did not settle the run, else
0 —, runs of the sweep settled when this call settled the run else 0). A key's TTL is set once,
by the call that creates it (its first run, its first count), not again per run: TTLs measure
from a sweep's first results, which the plan's outlives. A run settled here writes the activity
key (a drop, or a redelivered stored run clearing its marker): a stored run's sign of life is
its stream entry, a started run's its marker."""

BEGIN_RUN_LUA = """
local function in_flight()  -- the running hash's markers, less its sentinel (keys.SENTINEL, made with the plan)
  return redis.call('HLEN', KEYS[3]) - 1
end
local stop, stored = '', 0
if ARGV[6] == '1' then stop = redis.call('GET', KEYS[1]) or '' end
if ARGV[5] == '1' then stored = redis.call('EXISTS', KEYS[2]) end
if redis.call('HSETNX', KEYS[3], ARGV[1], cjson.encode({t = tonumber(ARGV[4]), h = ARGV[2], d = 0})) == 1 then
  return {stop, stored, 0, 0, in_flight()}
end
local deaths, duplicate = 0, 0
local ok, marker = pcall(cjson.decode, redis.call('HGET', KEYS[3], ARGV[1]) or '')
if ok and type(marker) == 'table' then
  deaths = tonumber(marker['d']) or 0
  if marker['h'] ~= ARGV[2] then
    if redis.call('EXISTS', ARGV[3] .. tostring(marker['h'])) == 0 then
      deaths = deaths + 1
    elseif ARGV[7] == '' or tonumber(ARGV[4]) - (tonumber(marker['t']) or 0) < tonumber(ARGV[7]) then
      duplicate = 1
    end
  end
end
if duplicate == 0 then
  redis.call('HSET', KEYS[3], ARGV[1], cjson.encode({t = tonumber(ARGV[4]), h = ARGV[2], d = deaths}))
end
return {stop, stored, deaths, duplicate, in_flight()}
"""
"""KEYS: stop key, run key, running hash; ARGV: the run's running field, this process's holder
token, heartbeat key prefix, epoch now, '1' to ask whether the run is stored (a redelivered or
republished message: a first delivery's run cannot be), '1' to read the stop key (the store
caches it a moment per process: ``SweepStore.begin_run``), the seconds a live holder's marker
stays its run in flight ('' for ever: past them the holder lost the run, e.g. a requeue after a
Redis fault, and the reconciler published it again). The common path is one HSETNX: the
run's marker, ``{"t": started, "h": holder, "d": deaths}``, is its lease (for the reconciler),
its sign of life (``SweepStore.last_activity``) and its crash record (``workers.crashes``); the
running hash is made with the plan, with its TTL, and never empties (``keys.SENTINEL``), so
no per-run EXPIRE. A marker already there is read: of a dead holder, the run was in flight when
that process died (deaths + 1); of a live holder elsewhere within ARGV[7], a concurrent duplicate
(left as it is: the caller drops its copy). Returns (stop reason or '' (also when not read), 1
when the run is stored already, deaths, 1 when duplicate, the sweep's runs in flight with this
one: the running hash's markers, its sentinel left out — one O(1) HLEN in the same round trip, the
one command a run costs beyond issue 32's ten; a hash that lost its sentinel counts one more, and
``SweepStore.begin_run`` never says less than 1)."""

STORE_RUN_LUA = _BARRIER + _OFFSET % 5 + """
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
"""
"""KEYS: run key, cases-done set, the case's settled bitfield, running hash, the sweep's settled
counter (the publishing window's measure; runs stored = it minus the dropped counter), stream,
the sweep's dropped counter; ARGV: RunResult JSON, TTL, case id, 1 if the run passed else 0, run
number, the run's running field (its marker goes: the run is over), the case's planned runs.
Returns (1 when counted, runs counted, runs passed of the case) followed by SETTLE_LUA's four
values; TTLs as there. Common path, inside: SET NX, HDEL, XADD, BITFIELD, INCR — the stream
entry's id (a timestamp) is the sweep's sign of life."""

STORE_CASE_LUA = """
local added = redis.call('SADD', KEYS[1], ARGV[1])
local done = redis.call('SCARD', KEYS[1])
if added == 1 and done == 1 then redis.call('EXPIRE', KEYS[1], ARGV[3]) end
if added == 1 and ARGV[2] ~= '' then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  redis.call('XADD', KEYS[3], '*', 'type', 'case', 'data', ARGV[2])
end
return done
"""
"""KEYS: cases-done set, stats hash, stream; ARGV: case id, CaseStats JSON ('' when no run
counted), TTL. Returns the number of cases done (the sweep's done-counter). The set's TTL is set
once, by the call that creates it; the stats hash's with the plan (``keys.SENTINEL``)."""

STORE_REPORT_LUA = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  redis.call('XADD', KEYS[2], '*', 'type', 'finish')
  redis.call('ZREM', KEYS[3], ARGV[3])
  for i = 4, #KEYS do redis.call('EXPIRE', KEYS[i], ARGV[2]) end
  redis.call('EXPIRE', KEYS[2], ARGV[2])
  return 1
end
return 0
"""
"""KEYS: report, stream, sweeps in flight, then the keys the report is read with later (the
stats hash, cases-done set; with the stream, their TTLs were set once, early: they now run as long
as the report's, once per sweep); ARGV: report JSON, TTL, sweep id. 1 when this call stored the report."""

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
    "CASE_HEAD_BITS",
    "CURSOR_LUA",
    "RELEASE_LUA",
    "RENEW_LUA",
    "SETTLE_LUA",
    "STORE_CASE_LUA",
    "STORE_REPORT_LUA",
    "STORE_RUN_LUA",
]
