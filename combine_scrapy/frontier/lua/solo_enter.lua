-- A single Redis only. KEYS: the job's ``harvesters``, then every bucket's prefix. ARGV: the harvester's id, now,
-- the most hosts with queued URLs it takes (solo.SOLO_MAX_HOSTS). Enters solo mode (library.lua's solo()) when that
-- harvester is the only one at work (the only entry of ``harvesters`` not expired at ``now``), no harvester is solo
-- and the frontier has at most that many hosts with queued URLs (this script and solo_leave's rebuild read each of
-- them, while Redis waits): sets the ``solo`` key to its id, empties the log, and answers a note (solo_note) of
-- every host with queued URLs, read in the same step, so the log holds every change after them. False when it did
-- not enter.

local harvesters = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[2], '+inf')
if #harvesters ~= 1 or harvesters[1] ~= ARGV[1] then return false end
local hosts = 0
for k = 2, #KEYS do hosts = hosts + redis.call('ZCARD', KEYS[k] .. 'hostq') end
if hosts > tonumber(ARGV[3]) then return false end
if not redis.call('SET', SOLO_KEY, ARGV[1], 'NX') then return false end
redis.call('DEL', SOLO_LOG)
solo_on = true
for k = 2, #KEYS do
  P = KEYS[k]
  for _, host in ipairs(redis.call('ZRANGE', P .. 'hostq', 0, -1)) do
    local top = redis.call('ZRANGE', P .. 'q:' .. host, 0, 0, 'WITHSCORES')
    if top[1] then solo_note(host, top, host_state(host)) end
  end
end
local notes = solo_notes
solo_notes = {}
return notes
