-- ARGV: now, max attempts, 'fifo' or 'best', end of the hold, depth. Returns the head of the queue of every
-- free host, and of every host leased until at most the end of the hold, with the host's lock and yield, and
-- with a depth above 0 the members and scores of the first URLs of its 'best' queue (as deeper.lua).

local now = tonumber(ARGV[1])
promote(now, tonumber(ARGV[2]))
local heads = {}
local hosts = redis.call('ZRANGEBYSCORE', P .. 'hostq', '-inf', ARGV[4], 'WITHSCORES')
for i = 1, #hosts, 2 do
  local host = hosts[i]
  local h = redis.call('HMGET', P .. 'host:' .. host, 'fetched', 'relevant', 'leased_until')
  if tonumber(hosts[i + 1]) <= now or tonumber(h[3] or 0) > now then
    local url = redis.call('ZRANGE', P .. ARGV[3] .. ':' .. host, 0, 0)[1]
    if ARGV[3] == 'best' then
      local seq = unhex(url)
      url = redis.call('ZRANGEBYSCORE', P .. 'fifo:' .. host, seq, seq, 'LIMIT', 0, 1)[1]
    end
    url = long(host, url)
    local r = load(host, url)
    local head = {url, host, num(r.priority), r.seq, r.etag or false, r.last_modified or false,
                  r.distance or 0, hosts[i + 1], h[1] or '0', h[2] or '0'}
    local depth = tonumber(ARGV[5])
    if depth > 0 then
      table.insert(head, redis.call('ZRANGE', P .. 'best:' .. host, 0, depth - 1, 'WITHSCORES'))
    end
    table.insert(heads, head)
  end
end
return heads
