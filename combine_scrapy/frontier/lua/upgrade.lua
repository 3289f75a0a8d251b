-- Brings a bucket of layout 3, 4 or 5 (ARGV[1]; '' when unknown: seeded by an older version) to today's. Each
-- host's count of URLs ever marked (layout 5 and before: ``urls`` in ``host:<host>``) is dropped: its ``u:``
-- hash's length is that count. Below layout 5 (or unknown), each host's 'best' queue moves from ``best:<host>``
-- (scored by minus the priority) to ``b:<host>`` (scored by best_score), joining what is there already, and
-- every host with queued URLs is placed among the bucket's heads anew (rehead; layout 3 had no heads). Run
-- again, it moves nothing and finds the same places.

local queues_moved = ARGV[1] == '5'
for _, host in ipairs(redis.call('SMEMBERS', P .. 'hosts')) do
  redis.call('HDEL', P .. 'host:' .. host, 'urls')
  if not queues_moved then
    local old = P .. 'best:' .. host
    local found = redis.call('ZRANGE', old, 0, -1, 'WITHSCORES')
    if #found > 0 then
      local scaled = {}
      for i = 1, #found, 2 do
        table.insert(scaled, score_text(best_score(0 - tonumber(found[i + 1]))))
        table.insert(scaled, found[i])
      end
      chunked('ZADD', P .. 'b:' .. host, nil, scaled)
      redis.call('DEL', old)
    end
  end
end
if not queues_moved then
  redis.call('DEL', P .. 'heads', P .. 'leasedheads', P .. 'waiting')
  for _, host in ipairs(redis.call('ZRANGE', P .. 'hostq', 0, -1)) do
    redis.call('HDEL', P .. 'host:' .. host, 'head')
    rehead(host, false)
  end
end
return 1
