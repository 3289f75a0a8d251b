-- KEYS: the prefixes of the buckets the URLs' hosts are in. ARGV: url, host, priority, its bucket's position in
-- KEYS, for each URL. Only marked URLs change. Each host's URLs are read with one HMGET and written with one HSET.

local hosts, order = {}, {}
for i = 1, #ARGV, 4 do
  local host = ARGV[i + 1]
  if not hosts[host] then
    hosts[host] = {key = tonumber(ARGV[i + 3]), entries = {}}
    table.insert(order, host)
  end
  table.insert(hosts[host].entries, i)
end
for _, host in ipairs(order) do
  local group = hosts[host]
  P = KEYS[group.key]
  local kept = {}
  for j, i in ipairs(group.entries) do kept[j] = short(host, ARGV[i]) end
  local stored = chunked('HMGET', P .. 'u:' .. host, nil, kept)
  local fields, scores = {}, {}
  for j, i in ipairs(group.entries) do
    local r = unpacked(stored[j])
    if r and r.marked == 1 then
      r.priority = tonumber(ARGV[i + 2])
      table.insert(fields, kept[j])
      table.insert(fields, packed(r))
      table.insert(scores, num(-r.priority))
      table.insert(scores, hexseq(r.seq))
    end
  end
  if #fields > 0 then
    chunked('HSET', P .. 'u:' .. host, nil, fields)
    chunked('ZADD', P .. 'best:' .. host, 'XX', scores)
    rehead(host, nil)
  end
end
