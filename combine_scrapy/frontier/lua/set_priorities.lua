-- KEYS: the prefixes of the buckets the URLs' hosts are in. ARGV: for each host (each once), the host, its bucket's
-- position in KEYS, how many of its URLs come as their members of its queue and how many as kept (short), then each
-- of the first as its new score in the host's queue (best_score, as text) and its member (the caller knows its order
-- of marking: hexseq(seq) then the URL as kept), as ZADD takes them, then each of the others as kept and its new
-- score. A queued URL's priority is its queue's score alone (its record's is as of when it last left the queue):
-- each host's URLs are scored again with one ZADD XX (the members given go as given: XX leaves out any not queued),
-- and only the record of a URL out of its queue (leased, waiting for a retry: in ``locked``) is written, with the
-- new priority it goes back with. Those records and those of the URLs given as kept are read with one HMGET with
-- the host's queue's best (QUEUE_TOP), of which only each record's first four values are unpacked; a host whose
-- records are not read has its best read from its queue. The head is placed again only when a changed URL was the
-- queue's best or now comes before it, and the queue's new best is read only when its best before fell or a member
-- given passes it (a member given may be of a URL no longer marked: only a read tells the queue's best then): else
-- it is the first of that URL and the changed ones. A host with queued URLs and no head waits for its lock in
-- 'waiting', by when it unlocks, which no priority changes: it stays there. In solo mode, where no host has a head,
-- the host's note gives its new best alone (its fields unchanged). Answers, for each URL whose record was read, its
-- number among the call's URLs (from 1, in the order given) and its order of marking (-1: none marked), so the caller
-- learns the members it did not know.

-- The URLs of ``locked`` (leased, waiting for a retry: out of their queues) as kept, by bucket prefix and host, of
-- the buckets of the members given: a bucket's whole set read when it holds no more URLs than the bucket's members
-- given (it holds the URLs in flight), else those members looked up in it (ZMSCORE): one command a bucket, or two.
local locked_kept = {}
do
  local given_by_key, at = {}, 1
  while at <= #ARGV do
    local given, kept = tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
    if given > 0 then
      local key = KEYS[tonumber(ARGV[at + 1])]
      given_by_key[key] = given_by_key[key] or {}
      table.insert(given_by_key[key], at)
    end
    at = at + 4 + 2 * (given + kept)
  end
  for key, starts in pairs(given_by_key) do
    local given = 0
    for _, start in ipairs(starts) do given = given + tonumber(ARGV[start + 2]) end
    local found = {}
    locked_kept[key] = found
    local function add(member)
      local host, kept = string.match(member, '^([^\n]*)\n(.*)$')
      found[host] = found[host] or {}
      found[host][kept] = true
    end
    local members = redis.call('ZRANGE', key .. 'locked', 0, given)   -- the whole set when it is no larger
    if #members <= given then
      for _, member in ipairs(members) do add(member) end
    else
      local held = {}
      for _, start in ipairs(starts) do
        for j = 1, tonumber(ARGV[start + 2]) do
          table.insert(held, ARGV[start] .. '\n' .. after_seq(ARGV[start + 3 + 2 * j]))
        end
      end
      for k, score in ipairs(chunked('ZMSCORE', key .. 'locked', nil, held)) do
        if score then add(held[k]) end
      end
    end
  end
end

local learned, number = {}, 0
local at = 1
while at <= #ARGV do
  local host, given = ARGV[at], tonumber(ARGV[at + 2])
  local count = given + tonumber(ARGV[at + 3])
  P = KEYS[tonumber(ARGV[at + 1])]
  local first = at + 4
  at = first + 2 * count
  -- read: the positions of the URLs whose record is read, fields their URLs as kept; out: the members given of URLs
  -- in ``locked`` (by position), read like those given as kept
  local read, fields, out = {}, {}, {}
  local host_locked = given > 0 and locked_kept[P][host]
  if host_locked then
    for j = 1, given do
      local kept = after_seq(ARGV[first + 2 * j - 1])
      if host_locked[kept] then read[#read + 1], fields[#fields + 1], out[j] = j, kept, true end
    end
  end
  for j = given + 1, count do read[#read + 1], fields[#fields + 1] = j, ARGV[first + 2 * j - 2] end
  local top, stored = nil, {}
  if fields[1] then
    fields[#fields + 1] = QUEUE_TOP
    stored = chunked('HMGET', P .. 'u:' .. host, nil, fields)
    top = top_of(table.remove(stored) or nil)
  end
  if not top then top = current_top(host) end
  local top_score, top_seq = top[1] and tonumber(top[2]), top[1] and unhex(top[1])
  -- scores: score, member pairs for the ZADD; placed: whether the head may have changed; top_now: the score of the
  -- best before, now (fell: it is now worse, or a URL maybe out of its queue would pass it: the best unknown);
  -- passing: the first URL given as kept, surely queued (no lock_until), that comes before the best before ({score,
  -- seq, member}); a member given that does so may be of a URL no longer marked: the best is read
  local scores, placed, top_now, fell, passing = {}, false, top_score, false, nil
  -- A changed URL, its member, score (as text) and order of marking; ``unsure`` when it may be out of its queue.
  local function changed_url(member, score, seq, unsure)
    if not top_score then return end   -- a host with no queued URL: its marked URLs are in no queue
    local value = tonumber(score)
    scores[#scores + 1] = score
    scores[#scores + 1] = member
    if member == top[1] then
      placed, top_now, fell = true, value, fell or value > top_score
    elseif comes_before(value, seq, top_score, top_seq) then
      placed = true
      if unsure then
        fell = true
      elseif not passing or comes_before(value, seq, passing[1], passing[2]) then
        passing = {value, seq, member}
      end
    end
  end
  -- The members given not out of their queues, scored with one ZADD of the arguments as given when none is out.
  if top_score then
    for j = 1, given do
      if not out[j] then
        local score, member = ARGV[first + 2 * j - 2], ARGV[first + 2 * j - 1]
        local value = tonumber(score)
        if member == top[1] then
          placed, top_now, fell = true, value, fell or value > top_score
        elseif value <= top_score and comes_before(value, unhex(member), top_score, top_seq) then
          placed, fell = true, true   -- a member given may be of a URL no longer marked: the best read
        end
        if #read > 0 or 2 * given > CHUNK then
          scores[#scores + 1] = score
          scores[#scores + 1] = member
        end
      end
    end
    if given > 0 and #read == 0 and 2 * given <= CHUNK then   -- a member out of its queue is left out by XX
      redis.call('ZADD', P .. 'q:' .. host, 'XX', unpack(ARGV, first, first + 2 * given - 1))
    end
  end
  for k, j in ipairs(read) do
    local value, kept, score, seq = stored[k], fields[k], ARGV[j > given and first + 2 * j - 1 or first + 2 * j - 2], -1
    if value then
      local marked, lock_until, _
      marked, lock_until, _, seq = cmsgpack.unpack(value)
      if marked == 1 then
        if lock_until then  -- maybe out of its queue: its record holds the priority it goes back with
          local written, values = record_values(value)
          values[3] = best_priority(score)
          pending_of(host)[kept] = cmsgpack.pack(unpack(values, 1, written))
        end
        if j > given then changed_url(hexseq(seq) .. kept, score, seq, lock_until) end   -- else in ``locked``
      else
        seq = -1
      end
    end
    learned[#learned + 1] = number + j
    learned[#learned + 1] = seq
  end
  number = number + count
  if scores[1] then chunked('ZADD', P .. 'q:' .. host, 'XX', scores) end
  if placed then  -- else its best is as before, and so its copy (QUEUE_TOP) and its head
    queue_changed(host)
    if not fell then  -- else read when needed
      local best = passing and comes_before(passing[1], passing[2], top_now, top_seq) and passing
                   or {top_now, top_seq, top[1]}
      set_top(host, {best[3], score_text(best[1])})
    end
    if solo() then
      solo_note(host, current_top(host))
    else
      local state = host_state(host)
      if state.head then rehead(host, nil, state) end
    end
  end
end
return learned
