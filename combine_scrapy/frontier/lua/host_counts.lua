-- ARGV: now. The bucket's hosts with marked URLs: those with queued URLs (hostq, scored by when the host unlocks)
-- and those with only leased or retry-waiting URLs ('locked', usually the few in flight); how many of them are
-- locked at ``now``, and when the first of those unlocks (false: none). For the progress line, every few seconds:
-- no host's queue is read.

local now = tonumber(ARGV[1])
local after = '(' .. ARGV[1]
local hosts = redis.call('ZCARD', P .. 'hostq')
local waiting = redis.call('ZCOUNT', P .. 'hostq', after, '+inf')
local first = redis.call('ZRANGEBYSCORE', P .. 'hostq', after, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]
first = first and tonumber(first)
local seen = {}
for _, member in ipairs(redis.call('ZRANGE', P .. 'locked', 0, -1)) do
  local host = split(member)
  if not seen[host] then
    seen[host] = true
    if not redis.call('ZSCORE', P .. 'hostq', host) then
      hosts = hosts + 1
      local lock = tonumber(redis.call('HGET', P .. 'host:' .. host, 'lock_until') or 0)
      if lock > now then
        waiting = waiting + 1
        if not first or lock < first then first = lock end
      end
    end
  end
end
return {hosts, waiting, first and num(first) or false}
