-- KEYS: the prefixes of the buckets the URLs' hosts are in. ARGV: url, host, priority, its bucket's position in
-- KEYS, for each URL. Only marked URLs whose priority differs change: their records repacked with the new
-- priority (the third value), no other field unpacked. Each host's URLs are read with one HMGET and written with
-- one HSET.

local hosts, order = by_host(ARGV, 1, 4)
for _, host in ipairs(order) do
  local group = hosts[host]
  local kept, stored = group_records(ARGV, host, group)
  local fields, scores = {}, {}
  for j, i in ipairs(group.entries) do
    if stored[j] then
      local count, values = record_values(stored[j])
      local priority = tonumber(ARGV[i + 2])
      if values[1] == 1 and values[3] ~= priority then
        values[3] = priority
        table.insert(fields, kept[j])
        table.insert(fields, cmsgpack.pack(unpack(values, 1, count)))
        table.insert(scores, score_text(best_score(priority)))
        table.insert(scores, hexseq(values[4]))
      end
    end
  end
  if #fields > 0 then
    chunked('HSET', P .. 'u:' .. host, nil, fields)
    chunked('ZADD', P .. 'b:' .. host, 'XX', scores)
    rehead(host, nil)
  end
end
