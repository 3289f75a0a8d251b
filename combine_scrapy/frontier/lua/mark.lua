-- KEYS: the prefixes of the buckets the entries' hosts are in, then (on a single Redis) the job's ``seq``.
-- ARGV: per-host bound (-1: none), distance, the position in KEYS of ``seq`` (0: none), how many entries, then for
-- each host (each once) the host, its bucket's position in KEYS and how many entries follow, then each entry's
-- URL as its host's structures keep it (short), priority and number, in the order given: with ``seq`` the batch
-- reserves its orders of marking with one INCRBY and a new URL's is the first reserved plus its number, else the
-- number is its order of marking (used only by new URLs). A known URL still marked and never fetched keeps the
-- higher priority (re-queued in place) and the lower distance: a queued URL's priority is its queue's score, its
-- record's only where it is out of its queue (leased, waiting for a retry), so a raise writes its record only for a
-- lower distance or out of its queue. A URL surely queued (no lock_until) and given once is raised with one ZADD XX
-- LT CH a host, whose answer counts those raised (those also closer, counted anyway, in a ZADD XX LT of their own);
-- the queue's best takes its score from its copy, and any other (maybe out of its queue, or given twice, whose
-- raises count one by one) from one ZMSCORE a host. Each host's URLs are read with one HMGET and its new ones
-- written with one command a structure, so a batch costs commands by host, not by URL. How many URLs of a host
-- were ever marked (what the bound counts) is in its ``u:`` hash (URL_COUNT), read and written with its records,
-- so the bound costs no command; the URLs marked count once a call ('urls'), in the stats of the first bucket in
-- KEYS (the job's counts are the sums over its buckets). ``completing``: the host of the page whose completion
-- runs next in the same script (complete_links.lua; nil alone): that completion places the host (hostq, its head)
-- after the marks, so they neither read its best URL nor place it. Answers what it did (marked, refused, raised),
-- the first order of marking it reserved (0 without ``seq``) and the numbers of the entries it did not number (known
-- or refused: each other's order of marking is that first plus its number, which the caller keeps to name the URL's
-- member of its queue to set_priorities.lua), then how many URLs of ``completing`` it queued (a script's answer is
-- its first value only).

local bound, distance, seq_key = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local first = 0
if seq_key > 0 then
  local count = tonumber(ARGV[4])
  first = redis.call('INCRBY', KEYS[seq_key], count) - count
end
local marked, refused, raised, queued_own, unnumbered = 0, 0, 0, 0, {}
local at = 5
while at <= #ARGV do
  local host, count = ARGV[at], tonumber(ARGV[at + 2])
  P = KEYS[tonumber(ARGV[at + 1])]
  local from = at + 3
  at = from + 3 * count
  local kept = {}
  for j = 1, count do kept[j] = ARGV[from + 3 * (j - 1)] end
  local stored, urls, stored_top = host_records(host, kept)
  local known = urls > 0   -- a URL of the host was marked before: else none is queued
  -- records: read or made in this batch; written: the members to store, in order; fresh: those new here;
  -- raised: the stored URLs whose priority rose, in order, with their new scores; new: the URLs new here
  local records, written, writes, fresh, raised_members, raised_scores = {}, {}, {}, {}, {}, {}
  -- below, below_closer: score, member pairs for ZADD XX LT (r.below), those not closer, counted, and the others;
  -- below_moves: their new scores and orders of marking
  local below, below_closer, below_moves = {}, {}, {}
  local new, waiting, given = {}, {}, {}
  for j = 1, count do
    local member = kept[j]
    given[member] = (given[member] or 0) + 1
    if records[member] == nil then  -- only the fields a mark reads; the whole record is unpacked if it is written
      local value, r = stored[j], false
      if value then
        local marked_, lock_until, priority_, seq, _, _, _, last_checked, _, _, distance_ = cmsgpack.unpack(value)
        r = {marked = marked_, priority = priority_, seq = seq, last_checked = last_checked, distance = distance_,
             stored = value, kept = member, locked = lock_until ~= nil}
        if marked_ == 1 and not last_checked then
          r.member = hexseq(seq) .. member   -- in its queue
          table.insert(waiting, r)
        end
      end
      records[member] = r
    end
  end
  -- Each still waiting takes its queue's score where queued (r.queued), or is raised in its queue by ZADD LT
  -- (r.below): from the copy of the queue's best (none queued: in no queue) when this script has not changed the
  -- queue, else read.
  local copy, asked, asking = not changed[P .. host] and stored_top, {}, {}
  for _, r in ipairs(waiting) do
    if copy and copy[1] == r.member then
      r.priority, r.queued = best_priority(copy[2]), true
    elseif copy and not copy[1] then  -- in no queue: its record's priority
    elseif not r.locked and given[r.kept] == 1 then
      r.below = true
    else
      table.insert(asked, r.member)
      table.insert(asking, r)
    end
  end
  if asked[1] then
    for k, score in ipairs(chunked('ZMSCORE', P .. 'q:' .. host, nil, asked)) do
      if score then asking[k].priority, asking[k].queued = best_priority(score), true end
    end
  end
  for j = 1, count do
    local i = from + 3 * (j - 1)
    local member, priority = kept[j], tonumber(ARGV[i + 1])
    local r = records[member]
    if r then
      unnumbered[#unnumbered + 1] = tonumber(ARGV[i + 2])
      if r.below then
        local score = best_score(priority)
        if distance < (r.distance or 0) then
          r.distance = distance ~= 0 and distance or nil
          table.insert(written, member)
          writes[member] = true
          raised = raised + 1
          table.insert(below_closer, score_text(score))
          table.insert(below_closer, r.member)
        else
          table.insert(below, score_text(score))
          table.insert(below, r.member)
        end
        table.insert(below_moves, {score, r.seq})
      elseif r.marked == 1 and not r.last_checked then
        local higher, closer = priority > r.priority, distance < (r.distance or 0)
        if higher then
          r.priority = priority
          if not fresh[member] then
            if not raised_scores[member] then table.insert(raised_members, member) end
            raised_scores[member] = score_text(best_score(priority))
          end
        end
        if closer then r.distance = distance ~= 0 and distance or nil end
        if higher or closer then
          if (closer or not r.queued) and not writes[member] then
            table.insert(written, member)
            writes[member] = true
          end
          raised = raised + 1
        end
      end
    else
      if bound >= 0 and urls >= bound then
        refused = refused + 1
        unnumbered[#unnumbered + 1] = tonumber(ARGV[i + 2])
      else
        local seq = first + tonumber(ARGV[i + 2])
        records[member] = {marked = 1, priority = priority, seq = seq, distance = distance ~= 0 and distance or nil}
        fresh[member], writes[member] = true, true
        table.insert(written, member)
        table.insert(new, member)
        urls = urls + 1
      end
    end
  end
  local fields = #written > 0 and pending_of(host)   -- sent with the script's other writes to the host's hash
  for _, member in ipairs(written) do
    local r = records[member]
    if r.stored then
      local whole = unpacked(r.stored)
      whole.priority, whole.distance = r.priority, r.distance
      fields[member] = packed(whole)
    elseif r.distance then  -- a new record as packed() writes it: marked, no lock, priority, seq[, distance]
      fields[member] = cmsgpack.pack(1, nil, r.priority, r.seq, nil, nil, nil, nil, nil, nil, r.distance)
    else
      fields[member] = cmsgpack.pack(1, nil, r.priority, r.seq)
    end
  end
  if #new > 0 then fields[URL_COUNT] = urls end
  local raises = {}
  for _, member in ipairs(raised_members) do
    table.insert(raises, raised_scores[member])
    table.insert(raises, records[member].member)
  end
  local own = host == completing
  -- The host's best queued URL before this batch (QUEUE_TOP, read with the records; none when no URL of the host was
  -- marked before; read from the queue when unknown, except for ``completing``'s): its head (rehead) changes only
  -- when the host had none or a URL of the batch now comes before it (a raised one may be that URL itself). With no
  -- URL raised that may do so (a raised one may be leased, out of its queue), its best after the batch is the first
  -- of that URL and the new ones, which this script knows from then on (set_top).
  local top, state = nil, nil
  if #new > 0 or #raises > 0 or below_moves[1] then
    if not known then
      top = {}
    elseif changed[P .. host] or not stored_top and not own then
      top = current_top(host)
    else
      top = stored_top
    end
  end
  local top_score, top_seq
  if top and top[1] then top_score, top_seq = tonumber(top[2]), unhex(top[1]) end
  local placed, first_score, first_seq, first_member = false, top_score, top_seq, nil
  for _, member in ipairs(raised_members) do
    placed = placed or may_change_head(tonumber(raised_scores[member]), records[member].seq, top_score, top_seq)
  end
  -- One raised by ZADD LT comes before the best only if it rose (the best is not among them): else the queue's order
  -- may have changed behind its best, which is as before.
  local below_placed = false
  for _, move in ipairs(below_moves) do
    below_placed = below_placed or may_change_head(move[1], move[2], top_score, top_seq)
  end
  if #raises > 0 or #new > 0 or below_placed then queue_changed(host) end
  if #raises > 0 then chunked('ZADD', P .. 'q:' .. host, 'XX', raises) end
  if below[1] then raised = raised + select(2, chunked('ZADD', P .. 'q:' .. host, {'XX', 'LT', 'CH'}, below)) end
  if below_closer[1] then chunked('ZADD', P .. 'q:' .. host, {'XX', 'LT'}, below_closer) end
  placed = placed or below_placed
  if #new > 0 then
    local queue = {}
    for _, member in ipairs(new) do
      local r = records[member]
      local score = best_score(r.priority)
      placed = placed or may_change_head(score, r.seq, top_score, top_seq)
      if comes_before(score, r.seq, first_score, first_seq) then
        first_score, first_seq, first_member = score, r.seq, hexseq(r.seq) .. member
      end
      table.insert(queue, score_text(score))
      table.insert(queue, hexseq(r.seq) .. member)
    end
    chunked('ZADD', P .. 'q:' .. host, nil, queue)
    if #raises == 0 and not below_placed and top then
      set_top(host, first_member and {first_member, score_text(first_score)} or top)
    end
    if own then
      queued_own = #new
    elseif not top_score then  -- a host with none queued enters hostq by its lock, read with what rehead reads
      state = host_state(host)
      redis.call('SADD', P .. 'hosts', host)
      redis.call('ZADD', P .. 'hostq', 'NX', state.lock_until or 0, host)
    end
    marked = marked + #new
  end
  if placed and not own then
    -- A host that had queued URLs and has no head waits for its lock in 'waiting', by when it unlocks: it stays
    -- (in solo mode no host has a head: the host is noted). With no URL raised, a head that changed is a new URL's.
    state = state or host_state(host)
    if not top_score or state.head or solo() then rehead(host, nil, state) end
  end
end
if marked > 0 then
  P = KEYS[1]
  redis.call('HINCRBY', P .. 'stats', 'urls', marked)
end
return {marked, refused, raised, first, unnumbered}, queued_own
