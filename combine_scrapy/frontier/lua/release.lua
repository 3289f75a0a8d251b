-- ARGV: url, host, host lock end, now ('' for none: no Crawl-delay stretch).

local url, host = ARGV[1], ARGV[2]
local r = load(host, url)
local state = host_state(host, 'delay')
local queued = r and r.marked == 1
if r then
  -- a marked URL goes back to its host's queues (where a leased one is not; adding it again changes nothing)
  if queued and r.lock_until ~= 0 then redis.call('ZREM', P .. 'locked', held(host, url)) end
  r.lock_until, r.attempts = 0, math.max(r.attempts - 1, 0)
  if queued then queue_url(url, host, r.seq, r.priority) end
  save(host, url, r)
else
  redis.call('SADD', P .. 'hosts', host)
end
local lock_until = tonumber(ARGV[3])
if ARGV[4] ~= '' then lock_until = with_delay(lock_until, tonumber(ARGV[4]), state.delay) end
state.lock_until = num(lock_until)
redis.call('HSET', P .. 'host:' .. host, 'lock_until', state.lock_until)
if queued then
  redis.call('ZADD', P .. 'hostq', state.lock_until, host)
else
  redis.call('ZADD', P .. 'hostq', 'XX', state.lock_until, host)
end
local leased = redis.call('HDEL', P .. 'host:' .. host, 'leased_until') == 1
state.leased_until = nil
rehead(host, false, state, leased)
