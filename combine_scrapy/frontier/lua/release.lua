-- ARGV: url, host, host lock end, now ('' for none: no Crawl-delay stretch).

local url, host = ARGV[1], ARGV[2]
local r = load(host, url)
if r then
  r.lock_until, r.attempts = 0, math.max(r.attempts - 1, 0)
  if r.marked == 1 then
    unplace(url, host, r.seq)
    enqueue(url, host, r.seq, r.priority)
  end
  save(host, url, r)
end
local lock_until = tonumber(ARGV[3])
if ARGV[4] ~= '' then lock_until = with_delay(host, tonumber(ARGV[4]), lock_until) end
set_host_lock(host, lock_until)
redis.call('HDEL', P .. 'host:' .. host, 'leased_until')
rehead(host, false)
