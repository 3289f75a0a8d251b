-- ARGV: now, max attempts, end of the hold, limit. The first ``limit`` heads (by weighted priority, then order
-- of marking) of the free hosts, and of the leased hosts that are free or leased until at most the end of the
-- hold, as (score, member) pairs of heads and of leasedheads: ``ready``'s first look for a strategy that reads
-- only the best heads, its cost in the limit and the leases, not in the hosts. A leased head is read (its host's
-- lock and lease) only while it may be among the first ``limit`` of both: when ``limit`` free heads are better,
-- or ``limit`` leased ones are taken, the rest are not read.

local now, hold_end, limit = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
promote(now, tonumber(ARGV[2]))
local freed = redis.call('ZRANGEBYSCORE', P .. 'waiting', '-inf', ARGV[1])
if #freed > 0 then
  redis.call('ZREMRANGEBYSCORE', P .. 'waiting', '-inf', ARGV[1])
  for _, host in ipairs(freed) do rehead(host, true) end
end
local heads = redis.call('ZRANGE', P .. 'heads', 0, limit - 1, 'WITHSCORES')
local members
if #heads == 2 * limit then
  members = redis.call('ZRANGEBYSCORE', P .. 'leasedheads', '-inf', heads[#heads], 'WITHSCORES')
else
  members = redis.call('ZRANGE', P .. 'leasedheads', 0, -1, 'WITHSCORES')
end
local leased = {}
for i = 1, #members, 2 do
  if #leased == 2 * limit then break end
  local host = after_seq(members[i])   -- a member of heads: the order of marking, then the host
  local h = redis.call('HMGET', P .. 'host:' .. host, 'lock_until', 'leased_until')
  local lock, leased_until = tonumber(h[1] or 0), tonumber(h[2] or 0)
  if leased_until <= now then  -- the lease ended without completion: placed as an unleased host
    redis.call('HDEL', P .. 'host:' .. host, 'leased_until')
    rehead(host, lock <= now, nil, true)
  end
  -- a host whose lease ended and whose lock is over went to heads, after they were read: answered here
  if lock <= now or (leased_until > now and lock <= hold_end) then
    table.insert(leased, members[i])
    table.insert(leased, members[i + 1])
  end
end
return {heads, leased}
