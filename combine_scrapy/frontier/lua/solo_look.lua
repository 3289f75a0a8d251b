-- A single Redis only. KEYS: every bucket's prefix. ARGV: the solo harvester's id, now, max attempts. A look of the
-- solo harvester: the URLs whose lease or lock ended back in their hosts' queues (promote, in every bucket), then
-- the log's notes with those of this script, in order, the log emptied. False when the ``solo`` key no longer
-- names the harvester (it was revoked: its memory is no longer kept up to date).

if redis.call('GET', SOLO_KEY) ~= ARGV[1] then return false end
solo_on = true
for k = 1, #KEYS do
  P = KEYS[k]
  promote(tonumber(ARGV[2]), tonumber(ARGV[3]))
end
local notes = redis.call('LRANGE', SOLO_LOG, 0, -1)
if notes[1] then redis.call('DEL', SOLO_LOG) end
for _, note in ipairs(solo_notes) do table.insert(notes, note) end
solo_notes = {}
return notes
