-- ARGV: now, lease end, then host, order of marking pairs: the URLs a BestFirst round chose, named as the look
-- ranked them (its 'best' queue's member), not read by it. Leases each URL still queued and free (take's lease),
-- found in its host's 'fifo' queue by its order of marking (the queue's score). For each pair, the URL and what
-- the harvester's entry needs of its record (priority, etag, Last-Modified, distance), or false when it was not
-- leased: no longer queued (another harvester leased it, or it was fetched) or its host is locked.

local now, lease_end = tonumber(ARGV[1]), ARGV[2]
local answers = {}
for i = 3, #ARGV, 2 do
  local host = ARGV[i]
  local kept = redis.call('ZRANGEBYSCORE', P .. 'fifo:' .. host, ARGV[i + 1], ARGV[i + 1], 'LIMIT', 0, 1)[1]
  local url = kept and long(host, kept)
  local r = url and lease(url, host, now, lease_end, '')
  answers[(i - 1) / 2] = r and {url, num(r.priority), r.etag or false, r.last_modified or false, r.distance or 0} or false
end
return answers
