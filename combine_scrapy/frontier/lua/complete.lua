-- ARGV: url, host, now, URL lock end, host lock end, keep marked (0/1), JSON of the given
-- status, etag, last_modified and score (absent: None), relevant (0/1: a new relevant record). ``queued``: how many
-- URLs of the page's host its links, marked before in the same script (complete_links.lua; nil alone), queued: the
-- host is placed (hosts, hostq, its head) here.

local url, host, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local keep = ARGV[6] == '1'
local given = cjson.decode(ARGV[7])
local r = load(host, url)
if r then
  unplace(url, host, r)
  local was, status = r.marked, r.status
  r.marked, r.lock_until, r.attempts, r.last_checked = keep and 1 or 0, tonumber(ARGV[4]), 0, now
  r.retries = keep and r.retries + 1 or 0
  r.status = given.status and tonumber(given.status) or nil
  if given.etag then r.etag = given.etag end
  if given.last_modified then r.last_modified = given.last_modified end
  save(host, url, r)
  if given.score then redis.call('HSET', P .. 'scores', url, given.score) end
  recount(was == 1, was == 0 and status, keep, not keep and given.status)
  if keep then place(url, host, r.seq, r.priority, r.lock_until, now) end
end
local placed_here = (queued or 0) > 0
-- A host with a URL is known; the host's lock (stretched by its Crawl-delay), lease, yield and head in one HMGET,
-- one HSET (and one HDEL of a head it loses). A lock already over (WaitIntervalHost 0) places the host in heads at
-- once.
if placed_here and not r then redis.call('SADD', P .. 'hosts', host) end
if r or placed_here or redis.call('SISMEMBER', P .. 'hosts', host) == 1 then
  local state = host_state(host, 'delay')
  local lock_until = with_delay(tonumber(ARGV[5]), now, state.delay)
  state.lock_until = num(lock_until)
  state.fetched = tonumber(state.fetched or 0) + 1
  state.relevant = num(tonumber(state.relevant or 0) * YIELD_DECAY + tonumber(ARGV[8]))
  lock_in_hostq(host, state.lock_until, placed_here)
  local leased, written = state.leased_until ~= nil, {'lock_until', state.lock_until, 'fetched', state.fetched,
                                                       'relevant', state.relevant}
  lease_ended(state, written)
  rehead(host, lock_until <= now and 'over' or false, state, leased, nil, written)
end
