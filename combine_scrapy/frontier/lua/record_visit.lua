-- ARGV: url, host, now, changed (0/1), digest ('' for none: a 304). Counts a fetch that gave the page.

local url, host = ARGV[1], ARGV[2]
local r = load(host, url)
if not r then return 0 end
r.visits = (r.visits or 0) + 1
r.changes = (r.changes or 0) + tonumber(ARGV[4])
r.first_visit = r.first_visit or tonumber(ARGV[3])
if ARGV[5] ~= '' then r.digest = ARGV[5] end
save(host, url, r)
return 1
