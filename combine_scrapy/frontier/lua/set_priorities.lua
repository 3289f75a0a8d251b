-- KEYS: the prefixes of the buckets the URLs' hosts are in. ARGV: url, host, priority, its bucket's position in
-- KEYS, for each URL. Only marked URLs whose priority differs change: their records repacked with the new
-- priority (the third value), no other field unpacked. Each host's URLs are read with one HMGET and written with
-- one HSET; its head is placed again only when its best queued URL may have changed: a changed URL was that URL,
-- or now comes before it (its best before the change as the records' HMGET read it, QUEUE_TOP, as mark does). A host with queued URLs and no
-- head waits for its lock in 'waiting', by when it unlocks, which no priority changes: it stays there (in solo
-- mode, where no host has a head, the host is noted).

local hosts, order = by_host(ARGV, 1, 4)
for _, host in ipairs(order) do
  local group = hosts[host]
  local kept, stored, _, stored_top = group_records(ARGV, host, group)
  local fields, scores, moved = {}, {}, {}
  for j, i in ipairs(group.entries) do
    if stored[j] then
      local count, values = record_values(stored[j])
      local priority = tonumber(ARGV[i + 2])
      if values[1] == 1 and values[3] ~= priority then
        values[3] = priority
        table.insert(fields, kept[j])
        table.insert(fields, cmsgpack.pack(unpack(values, 1, count)))
        local score = best_score(priority)
        table.insert(scores, score_text(score))
        table.insert(scores, hexseq(values[4]) .. kept[j])
        table.insert(moved, {score, values[4]})
      end
    end
  end
  if #fields > 0 then
    local written = pending_of(host)   -- sent with the script's other writes to the host's hash
    for k = 1, #fields, 2 do written[fields[k]] = fields[k + 1] end
    -- A host with no queued URL has no head, and its changed URLs (leased, waiting for a retry) are in no queue.
    local top = not changed[P .. host] and stored_top or current_top(host)
    if top[1] then
      local top_score, top_seq = tonumber(top[2]), unhex(top[1])
      local placed = false
      for _, entry in ipairs(moved) do placed = placed or may_change_head(entry[1], entry[2], top_score, top_seq) end
      chunked('ZADD', P .. 'q:' .. host, 'XX', scores)
      queue_changed(host)
      if placed then
        local state = host_state(host)
        if state.head or solo() then rehead(host, nil, state) end
      else
        set_top(host, top)   -- its best is as before
      end
    end
  end
end
