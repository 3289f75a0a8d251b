-- ARGV: how many hosts. The bucket's hosts with the most marked URLs, counted when read (a mark or a completion
-- keeps no count a host): each host of hostq's URLs queued (its queue's length) and every host's URLs locked (leased
-- or waiting for a retry, in 'locked'). At least that many when there are, more when counts tie at the last: for
-- each, the host, its marked URLs and its lock_until. It reads every host with queued URLs, for the rare callers
-- (``scrapy status``, the console's busiest hosts, the progress line).

local limit = tonumber(ARGV[1])
local counts, order = {}, {}
for _, host in ipairs(redis.call('ZRANGE', P .. 'hostq', 0, -1)) do
  counts[host] = redis.call('ZCARD', P .. 'q:' .. host)
  table.insert(order, host)
end
for _, member in ipairs(redis.call('ZRANGE', P .. 'locked', 0, -1)) do
  local host = split(member)
  if not counts[host] then
    counts[host] = 0
    table.insert(order, host)
  end
  counts[host] = counts[host] + 1
end
local sizes = {}
for _, host in ipairs(order) do
  if counts[host] > 0 then table.insert(sizes, counts[host]) end
end
if limit < 1 or not sizes[1] then return {} end
table.sort(sizes, function(a, b) return a > b end)
local least, found = sizes[math.min(limit, #sizes)], {}
for _, host in ipairs(order) do
  if counts[host] >= least then
    table.insert(found, {host, counts[host], redis.call('HGET', P .. 'host:' .. host, 'lock_until') or '0'})
  end
end
return found
