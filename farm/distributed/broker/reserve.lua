-- A batch of messages reserved: the one BRPOP gave and up to ARGV[2] more, each recorded in
-- kombu's unacked hash and its index (farm.distributed.broker.transport).
-- KEYS: the list BRPOP answered from, kombu's unacked hash, its index.
-- ARGV: the message BRPOP gave, how many more it may take, the time to index them at, SHARE.
-- At most a share of what is left, so that a short queue is spread over the worker's processes
-- and other workers instead of going whole to one (SHARE: farm.distributed.broker.transport).
-- Returns the messages taken besides ARGV[1].
local share = math.ceil(redis.call('LLEN', KEYS[1]) / tonumber(ARGV[4]))
local entries, index = {}, {}
local function record(item)
  local properties = cjson.decode(item)['properties']
  local delivery = properties['delivery_info']
  local tag = properties['delivery_tag']
  -- kombu's entry, [payload, exchange, routing key], with the payload's JSON kept as it came
  entries[#entries + 1] = tag
  entries[#entries + 1] = '[' .. item .. ',' .. cjson.encode(delivery['exchange']) .. ','
    .. cjson.encode(delivery['routing_key']) .. ']'
  index[#index + 1] = ARGV[3]
  index[#index + 1] = tag
end
record(ARGV[1])
local taken = {}
local more = math.min(tonumber(ARGV[2]), share)
if more > 0 then
  taken = redis.call('RPOP', KEYS[1], more) or {}
  for _, item in ipairs(taken) do record(item) end
end
-- the whole batch in one HSET and one ZADD (issue 32: they were one each a message)
redis.call('HSET', KEYS[2], unpack(entries))
redis.call('ZADD', KEYS[3], unpack(index))
return taken
