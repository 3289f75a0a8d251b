-- ARGV: url, host, host lock end, now ('' for none: no Crawl-delay stretch, and the host waits for its lock in
-- 'waiting' even when it is over).

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
local lock_until, now = tonumber(ARGV[3]), tonumber(ARGV[4])
if now then lock_until = with_delay(lock_until, now, state.delay) end
state.lock_until = num(lock_until)
lock_in_hostq(host, state.lock_until, queued)
-- the host's lock, lease and head in one HSET (and one HDEL of a head it loses); a lock already over places it in heads
local leased, written = state.leased_until ~= nil, {'lock_until', state.lock_until}
lease_ended(state, written)
rehead(host, now and lock_until <= now and 'over' or false, state, leased, nil, written)
