-- ARGV: url, host, priority triples. Only marked URLs change.

local touched = {}
for i = 1, #ARGV, 3 do
  local url, host, priority = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local r = load(host, url)
  if r and r.marked == 1 then
    r.priority = priority
    save(host, url, r)
    redis.call('ZADD', P .. 'best:' .. host, 'XX', num(-priority), hexseq(r.seq))
    touched[host] = true
  end
end
for host in pairs(touched) do rehead(host, nil) end
