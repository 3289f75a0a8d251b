-- ARGV: 'fifo' or 'best', then host, depth pairs. For each host, its head as head_row gives it (false when it
-- has no queued URL), its lock as the host's lock_until (the same number as its score in hostq).

local rows = {}
for i = 2, #ARGV, 2 do
  local h = redis.call('HMGET', P .. 'host:' .. ARGV[i], 'lock_until', 'fetched', 'relevant')
  table.insert(rows, head_row(ARGV[i], ARGV[1], h[1] or '0', h[2], h[3], tonumber(ARGV[i + 1])))
end
return rows
