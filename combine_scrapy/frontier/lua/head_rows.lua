-- ARGV: 'fifo' or 'best', depth, then hosts. For each host with queued URLs, its head as head_row gives it
-- (the lock its score in hostq); false for the others.

local rows = {}
for i = 3, #ARGV do
  local lock = redis.call('ZSCORE', P .. 'hostq', ARGV[i])
  table.insert(rows, lock and head_row(ARGV[i], ARGV[1], lock, tonumber(ARGV[2])) or false)
end
return rows
