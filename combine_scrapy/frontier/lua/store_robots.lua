-- KEYS: the bucket's prefix, then the host's robots.txt key (job-wide: a single Redis only, where one script
-- reaches both). ARGV: host, its delay ('' for none), expires, status ('' for none)[, body]. The answer
-- replaces the stored one whole, and the host's delay is set as host_delay.lua sets it, in one step.

local host, robots = ARGV[1], KEYS[2]
redis.call('DEL', robots)
redis.call('HSET', robots, 'expires', ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', robots, 'status', ARGV[4]) end
if ARGV[5] then redis.call('HSET', robots, 'body', ARGV[5]) end
set_host_delay(host, ARGV[2])
