-- ARGV: depth, then hosts. For each host, the members (order of marking, hexadecimal, then the URL as kept) and
-- scores of the first URLs of its queue.

local found = {}
for i = 2, #ARGV do
  table.insert(found, redis.call('ZRANGE', P .. 'q:' .. ARGV[i], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES'))
end
return found
