-- A single Redis only. KEYS: every bucket's prefix. ARGV: the id the ``solo`` key should name. Ends that solo mode
-- (its harvester leaves, or another revokes it: a harvester joined, or the solo one died) in one step: the key and
-- its log deleted, and every bucket's heads made anew as a layout upgrade makes them (every host's ``head`` field
-- dropped, each host of hostq placed again: a free one waits in 'waiting' for the next look). A script of the old
-- solo harvester that runs after it finds no key and keeps the heads as always. 0 when the key named someone else
-- or no one (nothing done), else 1.

if redis.call('GET', SOLO_KEY) ~= ARGV[1] then return 0 end
redis.call('DEL', SOLO_KEY, SOLO_LOG)
solo_on = false
for k = 1, #KEYS do
  P = KEYS[k]
  redis.call('DEL', P .. 'heads', P .. 'leasedheads', P .. 'waiting')
  for _, host in ipairs(redis.call('SMEMBERS', P .. 'hosts')) do redis.call('HDEL', P .. 'host:' .. host, 'head') end
  for _, host in ipairs(redis.call('ZRANGE', P .. 'hostq', 0, -1)) do rehead(host, false) end
end
return 1
