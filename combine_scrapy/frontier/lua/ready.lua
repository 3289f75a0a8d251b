-- ARGV: now, max attempts, 'fifo' or 'best', end of the hold, depth. Returns the head of the queue of every
-- free host, and of every host leased until at most the end of the hold, as head_row gives it.

local now = tonumber(ARGV[1])
promote(now, tonumber(ARGV[2]))
local heads = {}
local hosts = redis.call('ZRANGEBYSCORE', P .. 'hostq', '-inf', ARGV[4], 'WITHSCORES')
for i = 1, #hosts, 2 do
  local host = hosts[i]
  if tonumber(hosts[i + 1]) <= now or tonumber(redis.call('HGET', P .. 'host:' .. host, 'leased_until') or 0) > now then
    table.insert(heads, head_row(host, ARGV[3], hosts[i + 1], tonumber(ARGV[5])))
  end
end
return heads
