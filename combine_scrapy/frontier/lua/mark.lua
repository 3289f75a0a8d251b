-- ARGV: per-host bound (-1: none), distance, then url, host, priority, order of marking for each entry (the
-- order is used only by new URLs). A known URL still marked and never fetched keeps the higher priority
-- (re-queued in place) and the lower distance.

local bound, distance = tonumber(ARGV[1]), tonumber(ARGV[2])
local marked, refused, raised = 0, 0, 0
local touched = {}
for i = 3, #ARGV, 4 do
  local url, host, priority = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local r = load(host, url)
  if r then
    if r.marked == 1 and not r.last_checked then
      local higher, closer = priority > r.priority, distance < (r.distance or 0)
      if higher then
        r.priority = priority
        redis.call('ZADD', P .. 'best:' .. host, 'XX', num(-priority), hexseq(r.seq))
        touched[host] = true
      end
      if closer then r.distance = distance ~= 0 and distance or nil end
      if higher or closer then
        save(host, url, r)
        raised = raised + 1
      end
    end
  else
    redis.call('SADD', P .. 'hosts', host)
    if bound >= 0 and tonumber(redis.call('HGET', P .. 'host:' .. host, 'urls') or 0) >= bound then
      refused = refused + 1
    else
      local seq = tonumber(ARGV[i + 3])
      save(host, url, {marked = 1, priority = priority, seq = seq, distance = distance ~= 0 and distance or nil})
      redis.call('HINCRBY', P .. 'host:' .. host, 'urls', 1)
      redis.call('HINCRBY', P .. 'stats', 'urls', 1)
      recount(host, false, false, true, false)
      enqueue(url, host, seq, priority)
      touched[host] = true
      marked = marked + 1
    end
  end
end
for host in pairs(touched) do rehead(host, nil) end
return {marked, refused, raised}
