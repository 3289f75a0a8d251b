-- Places every host with queued URLs of the bucket among its heads anew (library.lua, rehead): what a
-- frontier of layout 3, which had none, needs; run again, it finds the same places.

redis.call('DEL', P .. 'heads', P .. 'leasedheads', P .. 'waiting')
for _, host in ipairs(redis.call('ZRANGE', P .. 'hostq', 0, -1)) do
  redis.call('HDEL', P .. 'host:' .. host, 'head')
  rehead(host, false)
end
return 1
