-- A run begun: its marker in the running hash, {"t": started, "h": holder, "d": deaths}.
-- KEYS: the stop key, the run key, the running hash.
-- ARGV: the run's running field, this process's holder token, the heartbeat key prefix, epoch now,
--   '1' to read the stop key (the store caches it a moment per process: SweepStore.begin_run),
--   the seconds a live holder's marker stays its run in flight ('' for ever: past them the holder
--   lost the run, e.g. a requeue after a Redis fault, and the reconciler published it again).
-- Returns {stop reason or '' (also when not read), 1 when the run is stored already, deaths,
-- 1 when duplicate, the sweep's runs in flight with this one: the running hash's markers, its
-- sentinel left out}.
-- The common path is an EXISTS and one HSETNX: the marker is the run's lease (for the
-- reconciler), its sign of life (SweepStore.last_activity) and its crash record
-- (workers.crashes); the running hash is
-- made with the plan, with its TTL, and never empties (keys.SENTINEL), so no per-run EXPIRE. A
-- marker already there is read: of a dead holder, the run was in flight when that process died
-- (deaths + 1); of a live holder elsewhere within ARGV[6], a concurrent duplicate (left as it is:
-- the caller drops its copy). A hash that lost its sentinel counts one more in the HLEN, and
-- SweepStore.begin_run never says less than 1. The HLEN (SPEC 25) and the EXISTS are the two
-- commands a run costs beyond issue 32's ten: every delivery asks whether its run is stored, a
-- first one too, which can be when two publishers raced at a lease's end or a message a live
-- worker held past the visibility timeout was restored for another; its agent must not be called
-- again (it was paid twice: tests/fleet/test_fleet_paid_once.py). A stored run is not marked.
local function in_flight()  -- the running hash's markers, less its sentinel (keys.SENTINEL, made with the plan)
  return redis.call('HLEN', KEYS[3]) - 1
end
local stop = ''
if ARGV[5] == '1' then stop = redis.call('GET', KEYS[1]) or '' end
if redis.call('EXISTS', KEYS[2]) == 1 then return {stop, 1, 0, 0, 0} end
if redis.call('HSETNX', KEYS[3], ARGV[1], cjson.encode({t = tonumber(ARGV[4]), h = ARGV[2], d = 0})) == 1 then
  return {stop, 0, 0, 0, in_flight()}
end
local deaths, duplicate = 0, 0
local ok, marker = pcall(cjson.decode, redis.call('HGET', KEYS[3], ARGV[1]) or '')
if ok and type(marker) == 'table' then
  deaths = tonumber(marker['d']) or 0
  if marker['h'] ~= ARGV[2] then
    if redis.call('EXISTS', ARGV[3] .. tostring(marker['h'])) == 0 then
      deaths = deaths + 1
    elseif ARGV[6] == '' or tonumber(ARGV[4]) - (tonumber(marker['t']) or 0) < tonumber(ARGV[6]) then
      duplicate = 1
    end
  end
end
if duplicate == 0 then
  redis.call('HSET', KEYS[3], ARGV[1], cjson.encode({t = tonumber(ARGV[4]), h = ARGV[2], d = deaths}))
end
return {stop, 0, deaths, duplicate, in_flight()}
