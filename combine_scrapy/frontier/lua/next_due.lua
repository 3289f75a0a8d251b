-- ARGV: how many leased URLs to look at. The earliest of: an unlocked host's
-- lock, and each leased URL's max(own lock, host lock), in order of own lock
-- until that order passes the best found.

local best = redis.call('ZRANGE', P .. 'hostq', 0, 0, 'WITHSCORES')[2]
best = best and tonumber(best)
local scan = tonumber(ARGV[1])
local locked = redis.call('ZRANGE', P .. 'locked', 0, scan - 1, 'WITHSCORES')
for i = 1, #locked, 2 do
  local lock_until = tonumber(locked[i + 1])
  if best and lock_until >= best then return num(best) end
  local host = split(locked[i])
  local due = math.max(lock_until, host_lock(host))
  if not best or due < best then best = due end
end
if #locked == 2 * scan then best = math.min(best, tonumber(locked[#locked])) end
return best and num(best)
