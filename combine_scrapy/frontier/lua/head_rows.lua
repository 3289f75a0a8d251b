-- ARGV: 'urls' or 'ranks', the look's clock, then host, depth pairs. For each host, its row as head_row gives it
-- for 'best' (false when it has no queued URL), its lock as the host's lock_until (the same number as its score
-- in hostq). A row of ranks has what ranks the host in a BestFirst round, the URL, priority and order of marking
-- of its best URL (from its queue), and not the URL's record, a command less: every row of a look that leases
-- what it hands out (take_heads reads the records of the URLs handed out), and with 'urls' the row of a host
-- still locked at the look's clock (its fetch in flight), which holds places in the round but is not handed out.

local function rank_row(host, lock, fetched, relevant, depth)
  local deeper = redis.call('ZRANGE', P .. 'q:' .. host, 0, math.max(depth, 1) - 1, 'WITHSCORES')
  if not deeper[1] then return false end
  local row = {long(host, after_seq(deeper[1])), host, num(best_priority(deeper[2])), unhex(deeper[1]), false, false, 0, lock, fetched or '0',
               relevant or '0'}
  if depth > 0 then table.insert(row, deeper) end
  return row
end

local urls, now, rows = ARGV[1] == 'urls', tonumber(ARGV[2]), {}
for i = 3, #ARGV, 2 do
  local h = redis.call('HMGET', P .. 'host:' .. ARGV[i], 'lock_until', 'fetched', 'relevant')
  local lock, depth = h[1] or '0', tonumber(ARGV[i + 1])
  if urls and tonumber(lock) <= now then
    table.insert(rows, head_row(ARGV[i], 'best', lock, h[2], h[3], depth))
  else
    table.insert(rows, rank_row(ARGV[i], lock, h[2], h[3], depth))
  end
end
return rows
