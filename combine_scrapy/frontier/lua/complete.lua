-- ARGV: url, host, now, URL lock end, host lock end, keep marked (0/1), JSON of the given
-- status, etag, last_modified and score (absent: None), relevant (0/1: a new relevant record).

local url, host, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local keep = ARGV[6] == '1'
local given = cjson.decode(ARGV[7])
local r = load(host, url)
if r then
  unplace(url, host, r.seq)
  local was, status = r.marked, r.status
  r.marked, r.lock_until, r.attempts, r.last_checked = keep and 1 or 0, tonumber(ARGV[4]), 0, now
  r.retries = keep and r.retries + 1 or 0
  r.status = given.status and tonumber(given.status) or nil
  if given.etag then r.etag = given.etag end
  if given.last_modified then r.last_modified = given.last_modified end
  save(host, url, r)
  if given.score then redis.call('HSET', P .. 'scores', url, given.score) end
  recount(host, was == 1, was == 0 and status, keep, not keep and given.status)
  if keep then place(url, host, r.seq, r.priority, r.lock_until, now) end
end
if redis.call('SISMEMBER', P .. 'hosts', host) == 1 then
  set_host_lock(host, with_delay(host, now, tonumber(ARGV[5])))
  redis.call('HDEL', P .. 'host:' .. host, 'leased_until')
  redis.call('HINCRBY', P .. 'host:' .. host, 'fetched', 1)
  local relevant = tonumber(redis.call('HGET', P .. 'host:' .. host, 'relevant') or 0)
  redis.call('HSET', P .. 'host:' .. host, 'relevant', num(relevant * YIELD_DECAY + tonumber(ARGV[8])))
  rehead(host, false)
elseif r then
  rehead(host, nil)
end
