-- ARGV: now, lease end, max attempts, then host, URL pairs: the URLs a BestFirst round chose, as the look read
-- them from their hosts' queues, not their records. Leases each URL still marked and free (take's lease) that
-- promote would not drop (handed out max attempts times: then in no queue). For each pair, the URL's priority and
-- what the harvester's entry needs of its record (etag, Last-Modified, distance), or false when it was not
-- leased: leased or fetched since (by another harvester), or its host is locked.

local now, lease_end, max_attempts = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local answers = {}
for i = 4, #ARGV, 2 do
  local url, host = ARGV[i + 1], ARGV[i]
  local r = load_with_top(host, url)
  r = r and r.attempts < max_attempts and lease(url, host, now, lease_end, '', r)
  answers[(i - 2) / 2] = r and {num(r.priority), r.etag or false, r.last_modified or false, r.distance or 0} or false
end
return answers
