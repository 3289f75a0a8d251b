-- KEYS: the prefixes of the buckets the URLs' hosts are in. ARGV: url, host, priority, its bucket's position in
-- KEYS, for each URL. Only marked URLs change. Each host's URLs are read with one HMGET and written with one HSET.

local hosts, order = by_host(ARGV, 1, 4)
for _, host in ipairs(order) do
  local group = hosts[host]
  local kept, stored = group_records(ARGV, host, group)
  local fields, scores = {}, {}
  for j, i in ipairs(group.entries) do
    local r = unpacked(stored[j])
    if r and r.marked == 1 then
      r.priority = tonumber(ARGV[i + 2])
      table.insert(fields, kept[j])
      table.insert(fields, packed(r))
      table.insert(scores, score_text(best_score(r.priority)))
      table.insert(scores, hexseq(r.seq))
    end
  end
  if #fields > 0 then
    chunked('HSET', P .. 'u:' .. host, nil, fields)
    chunked('ZADD', P .. 'b:' .. host, 'XX', scores)
    rehead(host, nil)
  end
end
