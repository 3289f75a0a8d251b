-- Brings a bucket of layout 3 to 9 (ARGV[1]; '' when unknown: seeded by an older version) to today's. Each host's
-- queue's best is written to its ``u:`` hash (QUEUE_TOP; layout 9 and before had none). Its stats'
-- count of marked URLs becomes that of the dropped ones (neither marked nor done: urls - marked - done). Each
-- host's count of URLs ever marked (layout 5 and before: ``urls`` in ``host:<host>``; layouts 6 and 7: the length
-- of its ``u:`` hash) is kept in its ``u:`` hash (URL_COUNT), unless there already. Each host's two queues (layout
-- 6 and before: ``fifo:<host>``, the URLs as kept scored by order of marking, and ``b:<host>``, their orders of
-- marking scored by best_score; below layout 5 or unknown ``best:<host>``, scored by minus the priority; a queued
-- URL missing there is scored by its record) become its one queue ``q:<host>``, joining what is there already; the
-- count of each host's marked URLs (``busy``, layout 6 and before) is dropped: it is counted when read. Below
-- layout 5 (or unknown) every host with queued URLs is also placed among the bucket's heads anew (rehead; layout 3
-- had no heads). Run again, it moves nothing and finds the same places.

local scaled_queues = ARGV[1] == '5' or ARGV[1] == '6' or ARGV[1] == '7' or ARGV[1] == '8' or ARGV[1] == '9'
local stats = redis.call('HMGET', P .. 'stats', 'urls', 'marked', 'done')
if stats[2] then
  redis.call('HSET', P .. 'stats', 'dropped', tonumber(stats[1] or 0) - tonumber(stats[2]) - tonumber(stats[3] or 0))
  redis.call('HDEL', P .. 'stats', 'marked')
end
for _, host in ipairs(redis.call('SMEMBERS', P .. 'hosts')) do
  redis.call('HDEL', P .. 'host:' .. host, 'urls')
  local urls = P .. 'u:' .. host
  if redis.call('HEXISTS', urls, URL_COUNT) == 0 then
    local count = redis.call('HLEN', urls)
    if count > 0 then redis.call('HSET', urls, URL_COUNT, count) end
  end
  if redis.call('EXISTS', urls) == 1 then queue_changed(host) end   -- its queue's best written at the end
  local by_seq = {}   -- a queued URL's score by its order of marking (hexseq)
  local old = P .. (scaled_queues and 'b:' or 'best:') .. host
  local found = redis.call('ZRANGE', old, 0, -1, 'WITHSCORES')
  for i = 1, #found, 2 do
    local score = tonumber(found[i + 1])
    by_seq[found[i]] = score_text(scaled_queues and score or best_score(0 - score))
  end
  local fifo = P .. 'fifo:' .. host
  found = redis.call('ZRANGE', fifo, 0, -1, 'WITHSCORES')
  if #found > 0 then
    local queue = {}
    for i = 1, #found, 2 do
      local seq = hexseq(tonumber(found[i + 1]))
      local score = by_seq[seq] or score_text(best_score(load(host, long(host, found[i])).priority))
      table.insert(queue, score)
      table.insert(queue, seq .. found[i])
    end
    chunked('ZADD', P .. 'q:' .. host, nil, queue)
  end
  redis.call('DEL', P .. 'b:' .. host, P .. 'best:' .. host, fifo)
end
redis.call('DEL', P .. 'busy')
if not scaled_queues then
  redis.call('DEL', P .. 'heads', P .. 'leasedheads', P .. 'waiting')
  for _, host in ipairs(redis.call('ZRANGE', P .. 'hostq', 0, -1)) do
    redis.call('HDEL', P .. 'host:' .. host, 'head')
    rehead(host, false)
  end
end
return 1
