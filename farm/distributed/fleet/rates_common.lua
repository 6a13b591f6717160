-- Put before rates_acquire.lua and rates_release.lua (farm.distributed.fleet.rates): the
-- functions both use. p is the parameters' JSON, decoded (farm.distributed.fleet.rates._parameters).
-- KEYS, ARGV: the script's it is put before (these functions read neither).
local function str(x) return string.format('%.17g', x) end
local function clock(given)
  local now = tonumber(given)
  if now then return now end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
local function factor(cut_factor, pause_until, p, now)
  if cut_factor >= 1 then return 1 end
  return math.min(1, cut_factor + p.recovery_per_s * math.max(0, now - pause_until) / 1000)
end
local function tokens_now(level, level_at, p, f, now)
  local capacity = p.tokens_per_s * p.bucket_s
  if not level then return capacity end
  return math.min(capacity, level + (now - level_at) * p.tokens_per_s * f / 1000)
end
