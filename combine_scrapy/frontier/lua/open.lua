-- KEYS: the job marker, layout and bucket count (job-wide, one slot); ARGV: a new marker's token, LAYOUT, the
-- bucket count. Sets the three when there is no marker, in one step, so no harvester sees a marker without its
-- layout; returns what the three hold.

if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('SET', KEYS[2], ARGV[2])
  redis.call('SET', KEYS[3], ARGV[3], 'NX')
end
return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]) or false, redis.call('GET', KEYS[3]) or false}
