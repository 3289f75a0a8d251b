-- ARGV: now, max attempts, 'fifo' or 'best', end of the hold, depth. Returns the head of the queue of every
-- free host, and of every host leased until at most the end of the hold, as head_row gives it.

local now = tonumber(ARGV[1])
promote(now, tonumber(ARGV[2]))
local heads = {}
local hosts = redis.call('ZRANGEBYSCORE', P .. 'hostq', '-inf', ARGV[4], 'WITHSCORES')
for i = 1, #hosts, 2 do
  local host = hosts[i]
  local h = redis.call('HMGET', P .. 'host:' .. host, 'fetched', 'relevant', 'leased_until')
  if tonumber(hosts[i + 1]) <= now or tonumber(h[3] or 0) > now then
    local row = head_row(host, ARGV[3], hosts[i + 1], h[1], h[2], tonumber(ARGV[5]))
    if row then table.insert(heads, row) end
  end
end
return heads
