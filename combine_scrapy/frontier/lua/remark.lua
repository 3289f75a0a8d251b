-- ARGV: url, host.

local url, host = ARGV[1], ARGV[2]
local r = load(host, url)
if not r then return 0 end
unplace(url, host, r)
local was = r.marked
r.marked, r.lock_until, r.attempts = 1, 0, 0
save(host, url, r)
recount(was == 1, was == 0 and r.status, true, false)
enqueue(url, host, r.seq, r.priority)
rehead(host, nil)
return 1
