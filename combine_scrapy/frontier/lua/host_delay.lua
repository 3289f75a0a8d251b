-- ARGV: host, Crawl-delay ('' for none).

redis.call('SADD', P .. 'hosts', ARGV[1])
if ARGV[2] == '' then
  redis.call('HDEL', P .. 'host:' .. ARGV[1], 'delay')
else
  redis.call('HSET', P .. 'host:' .. ARGV[1], 'delay', ARGV[2])
end
