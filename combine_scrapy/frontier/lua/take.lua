-- ARGV: now, lease end, then url, host pairs. Leases those still free; returns their positions (from 1).

local now, lease_end = tonumber(ARGV[1]), ARGV[2]
local taken = {}
for i = 3, #ARGV, 2 do
  if lease(ARGV[i], ARGV[i + 1], now, lease_end, '') then table.insert(taken, (i - 1) / 2) end
end
return taken
